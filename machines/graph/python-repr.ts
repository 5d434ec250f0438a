/**
 * Python's `repr` of the values that appear in Dask keys (str, int, float), so that
 * keys rendered here read exactly like `str(("x", 3))` does in Python: `('x', 3)`.
 */

// Python's str.isprintable() is false for these categories (the ASCII space excepted).
// Which characters are unassigned (Cn) follows the engine's Unicode version, which may
// be newer than the Python it imitates: recently added characters print as themselves.
const NOT_PRINTABLE = /^[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]$/u;

function hex(code: number, width: number): string {
  return code.toString(16).padStart(width, "0");
}

function escapeCodePoint(code: number): string {
  if (code <= 0xff) return `\\x${hex(code, 2)}`;
  if (code <= 0xffff) return `\\u${hex(code, 4)}`;
  return `\\U${hex(code, 8)}`;
}

/** `repr(s)` for a Python str: single quotes unless the text has a `'` and no `"`. */
export function pyStrRepr(text: string): string {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  let out = quote;
  // for..of walks code points; a lone surrogate comes out as itself (category Cs).
  for (const char of text) {
    const code = char.codePointAt(0)!;
    if (char === quote || char === "\\") out += `\\${char}`;
    else if (char === "\t") out += "\\t";
    else if (char === "\n") out += "\\n";
    else if (char === "\r") out += "\\r";
    else if (code < 0x20 || code === 0x7f) out += escapeCodePoint(code);
    else if (code < 0x7f) out += char;
    else if (NOT_PRINTABLE.test(char)) out += escapeCodePoint(code);
    else out += char;
  }
  return out + quote;
}

/**
 * `repr` of a number as Python prints it. A JavaScript number cannot tell `3` from
 * `3.0`, so safe integers print as Python ints (Dask key indices are ints); other
 * values print as Python floats: shortest round-trip digits, exponent form below 1e-4
 * or from 1e16 on (`1e-05`, `1e+16`), `inf`, `-inf`, `nan`.
 */
export function pyNumberRepr(value: number): string {
  if (Number.isNaN(value)) return "nan";
  if (value === Infinity) return "inf";
  if (value === -Infinity) return "-inf";
  if (Number.isSafeInteger(value)) return String(value);
  const sign = value < 0 ? "-" : "";
  // toExponential() without an argument gives the shortest digits that round-trip.
  const [mantissa, exponentText] = Math.abs(value).toExponential().split("e") as [string, string];
  const digits = mantissa.replace(".", "");
  const exponent = Number(exponentText);
  if (exponent < -4 || exponent >= 16) {
    const fraction = digits.length > 1 ? `.${digits.slice(1)}` : "";
    const expSign = exponent < 0 ? "-" : "+";
    return `${sign}${digits[0]}${fraction}e${expSign}${String(Math.abs(exponent)).padStart(2, "0")}`;
  }
  if (exponent < 0) return `${sign}0.${"0".repeat(-exponent - 1)}${digits}`;
  const whole = digits.slice(0, exponent + 1).padEnd(exponent + 1, "0");
  const fraction = digits.slice(exponent + 1);
  return `${sign}${whole}.${fraction === "" ? "0" : fraction}`;
}
