/**
 * Shapes of the plain objects the cores write into the log (a transition's reasons): each
 * field gives the type the core writes and the check a reader makes of what a log gives
 * back, so the two are one definition and cannot drift apart.
 */

/** One field: `test` checks a value read back; `type` only carries the TypeScript type. */
export interface Field<T> {
  readonly test: (value: unknown) => boolean;
  readonly optional: boolean;
  readonly type?: T;
}

export type Shape = { readonly [name: string]: Field<unknown> };

type TypeOf<F> = F extends Field<infer T> ? T : never;
type Flat<T> = { [K in keyof T]: T[K] };

/** The object type a shape describes (optional fields may be absent). */
export type ShapeType<S extends Shape> = Flat<
  { -readonly [K in keyof S as S[K]["optional"] extends true ? never : K]: TypeOf<S[K]> } & {
    -readonly [K in keyof S as S[K]["optional"] extends true ? K : never]?: TypeOf<S[K]>;
  }
>;

function field<T>(test: (value: unknown) => boolean): Field<T> {
  return { test, optional: false };
}

export const text: Field<string> = field((v) => typeof v === "string");
export const number: Field<number> = field((v) => typeof v === "number");
export const flag: Field<boolean> = field((v) => typeof v === "boolean");

/** One of these strings. */
export function oneOf<const L extends readonly string[]>(...values: L): Field<L[number]> {
  return field((v) => typeof v === "string" && values.includes(v));
}

/** The field may be absent (or undefined, as an object built in memory has it). */
export function optional<T>(f: Field<T>): Field<T> & { readonly optional: true } {
  return { test: (v) => v === undefined || f.test(v), optional: true };
}

export function listOf<T>(f: Field<T>): Field<T[]> {
  return field((v) => Array.isArray(v) && v.every((item) => f.test(item)));
}

/** A fixed-length array, a field per position. */
export function tuple<const F extends readonly Field<unknown>[]>(...fields: F): Field<{ -readonly [I in keyof F]: TypeOf<F[I]> }> {
  return field((v) => Array.isArray(v) && v.length === fields.length && fields.every((f, i) => f.test(v[i])));
}

/** A nested object of this shape (other fields allowed). */
export function object<S extends Shape>(shape: S): Field<ShapeType<S>> {
  return field((v) => isPlainObject(v) && matches(shape, v));
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Whether `value` has every field of `shape` as the shape says. Fields the shape does not
 * name are allowed (a newer log may add some), unless `exact`: then only the names in
 * `besides` may be there too.
 */
export function matches(shape: Shape, value: Record<string, unknown>, exact = false, besides?: ReadonlySet<string>): boolean {
  for (const name of Object.keys(shape)) if (!shape[name]!.test(value[name])) return false;
  if (exact) for (const name of Object.keys(value)) if (!Object.hasOwn(shape, name) && besides?.has(name) !== true) return false;
  return true;
}
