/**
 * A small JSON Schema (draft 2020-12) validator: the subset docs/schemas/ uses, and an error
 * for any keyword outside it, so a schema cannot silently mean more than is checked.
 *
 * Beyond validation it reports *undeclared* properties: ones an object schema neither lists
 * nor covers with `additionalProperties`. natsched's schemas allow unknown properties (a
 * receiver ignores them), so this is how a test notices a field on the wire that the schemas
 * do not document.
 */

type Schema = boolean | { [keyword: string]: unknown };

export interface Verdict {
  errors: string[];
  undeclared: string[];
}

const ANNOTATIONS = new Set(["$schema", "$id", "$defs", "title", "description", "default", "examples"]);
const KEYWORDS = new Set([
  ...ANNOTATIONS,
  "$ref",
  "type",
  "enum",
  "const",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "prefixItems",
  "minItems",
  "maxItems",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "minLength",
  "pattern",
  "oneOf",
  "anyOf",
]);

export class SchemaSet {
  private readonly documents = new Map<string, Schema>();

  /** Add a schema document; it must have an absolute `$id`. */
  add(schema: Schema): void {
    if (typeof schema !== "object" || typeof schema.$id !== "string") throw new Error("a schema document needs an $id");
    this.documents.set(new URL(schema.$id).href, schema);
  }

  get ids(): string[] {
    return [...this.documents.keys()];
  }

  validate(id: string, value: unknown): Verdict {
    const root = this.documents.get(new URL(id).href);
    if (root === undefined) throw new Error(`no schema ${id}`);
    return this.check(root, value, "", new URL(id).href);
  }

  /** Every $ref of every document, resolved (throws on one that does not resolve). */
  checkRefs(): number {
    let count = 0;
    const walk = (node: unknown, base: string): void => {
      if (Array.isArray(node)) return node.forEach((n) => walk(n, base));
      if (typeof node !== "object" || node === null) return;
      for (const [k, v] of Object.entries(node)) {
        if (k === "$ref") {
          this.resolve(v as string, base);
          count++;
        } else if (k !== "const" && k !== "enum") walk(v, base);
      }
    };
    for (const [id, doc] of this.documents) walk(doc, id);
    return count;
  }

  private resolve(ref: string, base: string): { schema: Schema; base: string } {
    const url = new URL(ref, base);
    const pointer = decodeURIComponent(url.hash.replace(/^#/, ""));
    url.hash = "";
    const doc = this.documents.get(url.href);
    if (doc === undefined) throw new Error(`$ref ${ref} from ${base}: no document ${url.href}`);
    let node: unknown = doc;
    for (const part of pointer.split("/").slice(1)) {
      node = (node as Record<string, unknown> | undefined)?.[part.replace(/~1/g, "/").replace(/~0/g, "~")];
      if (node === undefined) throw new Error(`$ref ${ref} from ${base}: nothing at ${pointer}`);
    }
    return { schema: node as Schema, base: url.href };
  }

  private check(schema: Schema, value: unknown, path: string, base: string): Verdict {
    const out: Verdict = { errors: [], undeclared: [] };
    if (schema === true) return out;
    if (schema === false) return { errors: [`${path || "/"}: not allowed`], undeclared: [] };
    for (const keyword of Object.keys(schema)) {
      if (!KEYWORDS.has(keyword)) throw new Error(`schema keyword ${keyword} (at ${base}) is not supported by this validator`);
    }
    const at = path || "/";
    const fail = (message: string) => out.errors.push(`${at}: ${message}`);
    const merge = (v: Verdict) => {
      out.errors.push(...v.errors);
      out.undeclared.push(...v.undeclared);
    };

    if (typeof schema.$ref === "string") {
      const target = this.resolve(schema.$ref, base);
      merge(this.check(target.schema, value, path, target.base));
    }
    if (schema.type !== undefined) {
      const types = Array.isArray(schema.type) ? (schema.type as string[]) : [schema.type as string];
      if (!types.some((t) => hasType(value, t))) {
        fail(`expected ${types.join(" or ")}, got ${typeOf(value)}`);
        return out;
      }
    }
    if ("const" in schema && !deepEqual(value, schema.const)) fail(`expected ${JSON.stringify(schema.const)}, got ${JSON.stringify(value)}`);
    if (Array.isArray(schema.enum) && !schema.enum.some((e) => deepEqual(e, value))) fail(`expected one of ${JSON.stringify(schema.enum)}, got ${JSON.stringify(value)}`);

    if (typeof value === "string") {
      if (typeof schema.minLength === "number" && [...value].length < schema.minLength) fail(`shorter than ${schema.minLength}`);
      if (typeof schema.pattern === "string" && !new RegExp(schema.pattern, "u").test(value)) fail(`does not match ${schema.pattern}`);
    }
    if (typeof value === "number") {
      if (typeof schema.minimum === "number" && value < schema.minimum) fail(`less than ${schema.minimum}`);
      if (typeof schema.maximum === "number" && value > schema.maximum) fail(`more than ${schema.maximum}`);
      if (typeof schema.exclusiveMinimum === "number" && value <= schema.exclusiveMinimum) fail(`not more than ${schema.exclusiveMinimum}`);
      if (typeof schema.exclusiveMaximum === "number" && value >= schema.exclusiveMaximum) fail(`not less than ${schema.exclusiveMaximum}`);
    }
    if (Array.isArray(value)) {
      if (typeof schema.minItems === "number" && value.length < schema.minItems) fail(`fewer than ${schema.minItems} items`);
      if (typeof schema.maxItems === "number" && value.length > schema.maxItems) fail(`more than ${schema.maxItems} items`);
      const prefix = Array.isArray(schema.prefixItems) ? (schema.prefixItems as Schema[]) : [];
      value.forEach((item, i) => {
        const itemSchema = i < prefix.length ? prefix[i] : (schema.items as Schema | undefined);
        if (itemSchema !== undefined) merge(this.check(itemSchema, item, `${path}/${i}`, base));
      });
    }
    if (isObject(value)) {
      const properties = (schema.properties ?? {}) as Record<string, Schema>;
      for (const name of (schema.required ?? []) as string[]) if (!(name in value)) fail(`missing required property ${name}`);
      for (const [name, v] of Object.entries(value)) {
        const child = `${path}/${name}`;
        if (Object.prototype.hasOwnProperty.call(properties, name)) merge(this.check(properties[name]!, v, child, base));
        else if (schema.additionalProperties !== undefined) merge(this.check(schema.additionalProperties as Schema, v, child, base));
        else if (schema.properties !== undefined) out.undeclared.push(child);
      }
    }
    if (Array.isArray(schema.oneOf)) {
      const verdicts = (schema.oneOf as Schema[]).map((s) => this.check(s, value, path, base));
      const passing = verdicts.filter((v) => v.errors.length === 0);
      if (passing.length === 1) out.undeclared.push(...passing[0]!.undeclared);
      else if (passing.length > 1) fail(`matches ${passing.length} branches of oneOf`);
      else fail(`matches no branch of oneOf: ${closest(verdicts).errors.join("; ")}`);
    }
    if (Array.isArray(schema.anyOf)) {
      const verdicts = (schema.anyOf as Schema[]).map((s) => this.check(s, value, path, base));
      const passing = verdicts.filter((v) => v.errors.length === 0);
      if (passing.length === 0) fail(`matches no branch of anyOf: ${closest(verdicts).errors.join("; ")}`);
      else out.undeclared.push(...passing.reduce((a, b) => (b.undeclared.length < a.undeclared.length ? b : a)).undeclared);
    }
    return out;
  }
}

/** The failing branch that got furthest (fewest errors), for a readable message. */
function closest(verdicts: Verdict[]): Verdict {
  return verdicts.reduce((a, b) => (b.errors.length < a.errors.length ? b : a));
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function hasType(value: unknown, type: string): boolean {
  switch (type) {
    case "object":
      return isObject(value);
    case "array":
      return Array.isArray(value);
    case "integer":
      return typeof value === "number" && Number.isInteger(value);
    case "number":
      return typeof value === "number" && Number.isFinite(value);
    case "null":
      return value === null;
    default:
      return typeof value === type;
  }
}

function typeOf(value: unknown): string {
  return value === null ? "null" : Array.isArray(value) ? "array" : typeof value;
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => deepEqual(a[k], b[k]));
  }
  return false;
}
