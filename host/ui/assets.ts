// The dashboard's two assets, kept as strings in the package (no build
// step, no CDN, works offline): the stylesheet and the enhancement script.
// The pages work without the script (forms post, links navigate); the
// script keeps the live region current by polling the page's own URL with
// `fragment=live` every `data-poll-ms` and swapping the region's HTML when
// it changed — not while a person is typing or pressing a button there —
// keeping what was typed and ticked (fields marked `data-keep`) and the focus. It runs under the page's CSP (`script-src
// 'self'`) and never builds markup from data: the server escaped it.

export const appCss = `
:root{--fg:#1d232b;--muted:#667085;--line:#e4e7ec;--bg:#fafbfc;--ok:#067647;--bad:#b42318;--wait:#b54708;--live:#175cd3;font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);background:var(--bg)}
body{margin:0}main{padding:0 20px 40px;max-width:1200px}
.top{display:flex;gap:16px;align-items:baseline;padding:10px 20px;border-bottom:1px solid var(--line);background:#fff}
.brand{font-weight:700;color:var(--fg);text-decoration:none}.live-state{margin-left:auto}.live-state.stale{color:var(--bad)}
a{color:var(--live)}code{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace}
.muted{color:var(--muted)}.small{font-size:12px}
h1{font-size:18px;display:flex;gap:10px;align-items:center;flex-wrap:wrap}h1 code{font-size:16px}h2{font-size:15px;margin:22px 0 8px}h3{font-size:13px;margin:12px 0 4px}
table{border-collapse:collapse;width:100%;background:#fff;border:1px solid var(--line)}th,td{text-align:left;padding:6px 8px;border-bottom:1px solid var(--line);vertical-align:top}th{font-weight:600;color:var(--muted);font-size:12px}
td.input{max-width:320px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}.num{text-align:right}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;background:#eef2f6;white-space:nowrap}
.badge.ok{background:#dcfae6;color:var(--ok)}.badge.bad{background:#fee4e2;color:var(--bad)}.badge.wait{background:#fef0c7;color:var(--wait)}.badge.live{background:#d1e9ff;color:var(--live)}
.ok-text{color:var(--ok)}.bad-text{color:var(--bad)}
.counts{display:flex;gap:8px;flex-wrap:wrap;margin:16px 0 8px;align-items:center}.count{padding:4px 10px;border:1px solid var(--line);border-radius:6px;background:#fff;text-decoration:none;color:var(--fg)}.count.selected{border-color:var(--live)}
.filter{display:flex;gap:10px;flex-wrap:wrap;align-items:end;margin:8px 0}.filter label{display:flex;flex-direction:column;font-size:12px;color:var(--muted)}
input,select,button{font:inherit}input[type=text],input[type=search]{padding:4px 6px;border:1px solid #d0d5dd;border-radius:4px}
button{padding:4px 12px;border:1px solid #d0d5dd;border-radius:4px;background:#fff;cursor:pointer}button.approve{background:var(--ok);color:#fff;border-color:var(--ok)}button.reject{color:var(--bad);border-color:var(--bad)}
.approval{background:#fff;border:1px solid #fedf89;border-radius:6px;padding:10px 14px;margin:8px 0}.approval form{display:flex;gap:8px;align-items:end;flex-wrap:wrap}.approval label{display:flex;flex-direction:column;font-size:12px;color:var(--muted);flex:1;min-width:240px}
pre.json{background:#f2f4f7;padding:6px 8px;border-radius:4px;margin:4px 0;white-space:pre-wrap;word-break:break-word;max-height:320px;overflow:auto;font-size:12px}
.pill{background:var(--wait);color:#fff;border-radius:9px;padding:0 7px;font-size:12px}
.notice{margin:10px 20px;padding:8px 12px;border-radius:6px}.notice.ok{background:#dcfae6}.notice.bad{background:#fee4e2}
.summary dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:0}.summary dt{color:var(--muted)}
.timeline{list-style:none;padding:0;border-left:2px solid var(--line);margin-left:6px}.step{padding:4px 0 8px 14px;position:relative}
.step::before{content:"";position:absolute;left:-6px;top:9px;width:10px;height:10px;border-radius:50%;background:var(--line)}
.step.terminal::before{background:var(--ok)}.step.terminal.failed::before{background:var(--bad)}.step.terminal.cancelled::before{background:var(--bad)}.step.approval_requested::before,.step.approval_decided::before{background:var(--wait)}.step.recovered::before{background:#7a5af8}
.kind{font-weight:600}.calls{padding-left:18px;margin:4px 0}blockquote{margin:4px 0;padding:4px 10px;border-left:3px solid var(--line)}
.pager{display:flex;gap:12px;margin:8px 0}.bulk{display:flex;gap:8px;flex-wrap:wrap;align-items:center;margin:6px 0}form.bulk-confirm{margin:10px 0;display:flex;gap:8px;align-items:end}
form.inline{display:inline}form.cancel,form.retry{margin:8px 0}.error-line code{color:var(--bad)}
.nav{color:var(--live);text-decoration:none}.definition{font-weight:600}
.approval form.decide{display:block}.decide-row{display:flex;gap:8px;align-items:end;flex-wrap:wrap;margin:6px 0}
textarea{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace;padding:4px 6px;border:1px solid #d0d5dd;border-radius:4px;width:100%;box-sizing:border-box}
.json-edit{display:block;background:#f8f9fb;margin:4px 0}details{margin:6px 0}summary{cursor:pointer}
.context{margin:6px 0}.turns{list-style:none;padding:0;margin:4px 0}.turn{padding:2px 0}.who{display:inline-block;min-width:68px;color:var(--muted);font-size:12px}
.fields{display:flex;gap:12px;flex-wrap:wrap;align-items:end}.approval .fields label{flex:0 1 auto;min-width:160px}.approval label.check{flex-direction:row;align-items:center;gap:6px;min-width:0}
.transcript{list-style:none;padding:0}.exchange{background:#fff;border:1px solid var(--line);border-radius:6px;padding:8px 12px;margin:8px 0}
.messages{list-style:none;padding:0;margin:4px 0}.msg{padding:3px 0}.msg.user{font-weight:500}.msg.queued{opacity:.7}.msg p{margin:2px 0 2px 72px}.tool-call{margin-left:72px}
.waterfall td.bar{width:40%;min-width:200px}.waterfall svg{width:100%;height:12px;display:block}.waterfall td.what,.waterfall td.duration{white-space:nowrap}
rect.model{fill:var(--live)}rect.tools{fill:var(--ok)}rect.wait{fill:var(--wait)}rect.open{opacity:.45}.retries{margin:2px 0;padding-left:16px;color:var(--bad)}
form.talk{display:flex;flex-direction:column;gap:8px;max-width:720px}form.talk label{display:flex;flex-direction:column;font-size:12px;color:var(--muted)}#send form.talk{flex-direction:row;align-items:end}#send label{flex:1}
`;

export const appJs = `"use strict";
(function () {
  var live = document.getElementById("live");
  var state = document.getElementById("live-state");
  if (!live) return;
  var pollMs = Number(live.getAttribute("data-poll-ms")) || 1000;
  var busy = false;
  var last = null;
  function fragmentUrl() {
    var url = new URL(location.href);
    url.searchParams.set("fragment", "live");
    return url.toString();
  }
  function kept() {
    var values = {};
    live.querySelectorAll("[data-keep]").forEach(function (field) { values[field.getAttribute("data-keep")] = field.type === "checkbox" ? field.checked : field.value; });
    live.querySelectorAll("details").forEach(function (details, index) { if (details.open) values["open:" + index] = true; });
    var focused = document.activeElement && live.contains(document.activeElement) ? document.activeElement.getAttribute("data-keep") : null;
    return { values: values, focused: focused };
  }
  function restore(saved) {
    live.querySelectorAll("[data-keep]").forEach(function (field) {
      var key = field.getAttribute("data-keep");
      if (Object.prototype.hasOwnProperty.call(saved.values, key)) { if (field.type === "checkbox") field.checked = saved.values[key]; else field.value = saved.values[key]; }
      if (key === saved.focused) field.focus();
    });
    live.querySelectorAll("details").forEach(function (details, index) { if (saved.values["open:" + index]) details.open = true; });
  }
  // A person typing, choosing or pressing a button in the region: the swap
  // waits (replacing the element under the pointer would lose the click).
  function editing() {
    var active = document.activeElement;
    return !!active && live.contains(active) && /^(INPUT|SELECT|TEXTAREA|BUTTON)$/.test(active.tagName);
  }
  function tick() {
    if (busy || document.hidden) return;
    busy = true;
    fetch(fragmentUrl(), { headers: { accept: "text/html" }, cache: "no-store", credentials: "same-origin" }).then(function (response) {
      if (!response.ok) throw new Error(String(response.status));
      return response.text();
    }).then(function (text) {
      if (text !== last && !editing()) {
        var saved = kept();
        live.innerHTML = text;
        last = text;
        restore(saved);
      }
      if (state) { state.textContent = "live"; state.className = "live-state muted"; }
    }).catch(function (error) {
      if (state) { state.textContent = "not updating (" + error.message + ")"; state.className = "live-state stale"; }
    }).then(function () { busy = false; });
  }
  setInterval(tick, pollMs);
  document.addEventListener("visibilitychange", tick);
})();
`;
