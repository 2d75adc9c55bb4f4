// Masking by value (host/ui/masking.ts): card numbers that pass the Luhn
// check, bearer and basic credentials, and keys of well-known shapes are
// masked wherever they occur; order numbers, timestamps and ordinary text stay.

import { describe, expect, it } from "vitest";
import { unmasked } from "../../host/ui/decision-fields.js";
import { maskText, masked } from "../../host/ui/masking.js";

describe("masking by value", () => {
  it("masks card numbers (Luhn-valid), credentials and well-known keys, keeping the rest", () => {
    expect(maskText("pay with 4242 4242 4242 4242 today")).toBe("pay with card ***4242 today");
    expect(maskText("card 5555-5555-5555-4444")).toBe("card card ***4444");
    expect(maskText("order 1234567890123 at 1750000000000")).toBe("order 1234567890123 at 1750000000000"); // not Luhn-valid
    expect(maskText("Authorization: Bearer abc.def-ghi_jkl")).toBe("Authorization: Bearer ***");
    expect(maskText("key sk-proj-AbCdEfGhIjKlMnOpQrSt and ghp_0123456789abcdefghijABCDEFGHIJ0123")).toBe("key *** and ***");
    expect(maskText("AKIAABCDEFGHIJKLMNOP")).toBe("***");
    expect(maskText("jwt eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.SflKxwRJSMeKKF2QT4")).toBe("jwt ***");
    expect(maskText("Where is order 42?")).toBe("Where is order 42?");
  });

  it("masks inside JSON values at any depth, and by field name as before", () => {
    expect(masked({ payment: { number: "4111 1111 1111 1111", apiKey: "anything", notes: ["Bearer abcdefghij"] }, amount: 19.5 })).toEqual({
      payment: { number: "card ***1111", apiKey: "***", notes: ["Bearer ***"] },
      amount: 19.5,
    });
  });

  it("an edit leaves a value shown masked as it was: its stored value goes back, whatever masked it", () => {
    const stored = { card: "4242 4242 4242 4242", apiKey: "k-1", note: "Bearer abcdefghijkl", amount: 30 };
    const shown = masked(stored) as Record<string, unknown>;
    expect(shown).toEqual({ card: "card ***4242", apiKey: "***", note: "Bearer ***", amount: 30 });
    expect(unmasked({ ...shown, amount: 20 } as never, stored)).toEqual({ ...stored, amount: 20 });
    expect(unmasked({ ...shown, card: "5555 5555 5555 4444" } as never, stored)).toEqual({ ...stored, card: "5555 5555 5555 4444" });
  });
});
