// HTML built from tagged templates that escape every interpolated value:
// `html\`<td>${row.executionId}</td>\`` escapes the id; only another
// `html` result (an `Html`) is inserted as markup. Every value the dashboard
// shows comes from the store (tool arguments, model text, error messages,
// reasons a person typed), so nothing reaches the page unescaped unless it
// was built here from constants.

export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

const replacements: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;", "`": "&#96;" };

/** `value` with `&`, `<`, `>`, `"`, `'` and the backtick replaced by their
 * entities: safe as text and in a quoted attribute value. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"'`]/g, (character) => replacements[character]!);
}

type Part = Html | string | number | boolean | null | undefined | readonly Part[];

function render(part: Part): string {
  if (part === null || part === undefined || part === false) return "";
  if (part instanceof Html) return part.text;
  if (Array.isArray(part)) return (part as readonly Part[]).map(render).join("");
  return escapeHtml(String(part));
}

export function html(strings: TemplateStringsArray, ...values: Part[]): Html {
  let text = strings[0]!;
  for (let index = 0; index < values.length; index += 1) text += render(values[index]!) + strings[index + 1]!;
  return new Html(text);
}

/** Markup built from constants only (never from a stored value). */
export function trusted(text: string): Html {
  return new Html(text);
}
