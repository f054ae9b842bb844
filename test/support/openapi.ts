import fc from "fast-check";
import { z } from "zod";

/*
 * The parts of an OpenAPI 3.1 document the conventions test and the fuzzer read, typed loosely: the
 * document is data here, read the way a client generator reads it.
 */

export type Schema = {
  $ref?: string;
  type?: string | string[];
  format?: string;
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean | Schema;
  items?: Schema;
  allOf?: Schema[];
  anyOf?: Schema[];
  oneOf?: Schema[];
  [keyword: string]: unknown;
};

export type Parameter = {
  name: string;
  in: "path" | "query" | "header" | "cookie";
  required?: boolean;
  schema?: Schema;
};
export type MediaType = { schema?: Schema };
export type Operation = {
  operationId?: string;
  summary?: string;
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content?: Record<string, MediaType> };
  responses: Record<string, { description: string; content?: Record<string, MediaType>; headers?: unknown }>;
  security?: Record<string, string[]>[];
};
export type OpenApiDocument = {
  openapi: string;
  servers?: { url: string }[];
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, Schema>; securitySchemes?: Record<string, unknown> };
};

/**
 * `json` (openapi/openapi.json as imported, typed by its contents) as a document, once its outline is
 * checked: a version and operations by path and method.
 */
export function openApiDocument(json: unknown): OpenApiDocument {
  const outline = z.object({ openapi: z.string(), paths: z.record(z.string(), z.record(z.string(), z.unknown())) });
  return z.custom<OpenApiDocument>((value) => outline.safeParse(value).success).parse(json);
}

const methods = ["get", "put", "post", "delete", "patch", "head", "options", "trace"];

/** Every operation of the document with its method and path. */
export function operationsOf(document: OpenApiDocument) {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => methods.includes(method))
      .map(([method, operation]) => ({ path, method, operation })),
  );
}

/** The schema a `$ref` names (component schemas only), or the schema itself. */
export function resolve(document: OpenApiDocument, schema: Schema): Schema {
  const ref = schema.$ref;
  if (!ref) return schema;
  const name = ref.replace("#/components/schemas/", "");
  const target = document.components?.schemas?.[name];
  if (!target) throw new Error(`unresolvable $ref ${ref}`);
  return resolve(document, target);
}

/** Keywords that only annotate: a validator must not read `default` as "absent is fine". */
const annotations = new Set(["default", "example", "examples", "description", "title", "deprecated", "readOnly"]);

/**
 * The schema as a validator should read it: `$ref`s inlined, `allOf` merged into one object, annotations
 * dropped, and every object that does not say otherwise closed (`additionalProperties: false`), so a field
 * the document does not describe fails validation instead of passing unseen.
 */
export function closedSchema(document: OpenApiDocument, schema: Schema, seen: string[] = []): Schema {
  if (schema.$ref) {
    if (seen.includes(schema.$ref)) throw new Error(`recursive $ref ${schema.$ref} is not supported`);
    return closedSchema(document, resolve(document, { $ref: schema.$ref }), [...seen, schema.$ref]);
  }
  const out: Schema = {};
  for (const [keyword, value] of Object.entries(schema)) {
    if (annotations.has(keyword)) continue;
    if (keyword === "properties") {
      out.properties = Object.fromEntries(
        Object.entries(value as Record<string, Schema>).map(([name, property]) => [
          name,
          closedSchema(document, property, seen),
        ]),
      );
    } else if (keyword === "items" || (keyword === "additionalProperties" && typeof value === "object")) {
      out[keyword] = closedSchema(document, value as Schema, seen);
    } else if (keyword === "anyOf" || keyword === "oneOf") {
      out[keyword] = (value as Schema[]).map((member) => closedSchema(document, member, seen));
    } else if (keyword !== "allOf") {
      out[keyword] = value;
    }
  }
  if (schema.allOf) {
    for (const member of schema.allOf.map((part) => closedSchema(document, part, seen))) {
      out.type ??= member.type;
      out.properties = { ...out.properties, ...member.properties };
      out.required = [...new Set([...(out.required ?? []), ...(member.required ?? [])])];
      if (member.additionalProperties !== false && member.additionalProperties !== undefined) {
        out.additionalProperties = member.additionalProperties;
      }
    }
  }
  if (out.properties && out.additionalProperties === undefined) out.additionalProperties = false;
  return out;
}

/** A validator of `schema` as the document states it (see {@link closedSchema}). */
export function validatorOf(document: OpenApiDocument, schema: Schema): z.ZodType {
  return z.fromJSONSchema(closedSchema(document, schema) as Parameters<typeof z.fromJSONSchema>[0]);
}

/** Integers near the lower bound most of the time (pages, versions), anywhere in the range otherwise. */
function integerIn(schema: Schema): fc.Arbitrary<number> {
  const min = schema.minimum ?? -1_000_000;
  const max = Math.min(schema.maximum ?? Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
  return fc.oneof(
    { weight: 4, arbitrary: fc.integer({ min, max: Math.min(max, min + 5) }) },
    { weight: 1, arbitrary: fc.maxSafeInteger().filter((value) => value >= min && value <= max) },
    { weight: 1, arbitrary: fc.constantFrom(min, max) },
  );
}

const utcDay = fc
  .date({ min: new Date("2000-01-01T00:00:00Z"), max: new Date("2040-12-31T00:00:00Z"), noInvalidDate: true })
  .map((date) => date.toISOString().slice(0, 10));

function stringOf(schema: Schema): fc.Arbitrary<string> {
  switch (schema.format) {
    case "uuid":
      return fc.uuid();
    case "date":
      return utcDay;
    case "date-time":
      return fc.date({ noInvalidDate: true }).map((date) => date.toISOString());
  }
  const length = { minLength: schema.minLength ?? 0, maxLength: Math.min(schema.maxLength ?? 40, 40) };
  if (schema.pattern) {
    const pattern = new RegExp(schema.pattern);
    return fc
      .stringMatching(pattern)
      .filter((value) => value.length >= length.minLength && value.length <= (schema.maxLength ?? Infinity));
  }
  return fc.string({ ...length, unit: "grapheme" });
}

/** Values `schema` accepts (for the keywords the API's request schemas use). */
export function acceptedValue(document: OpenApiDocument, schema: Schema): fc.Arbitrary<unknown> {
  if (schema.$ref) return acceptedValue(document, resolve(document, schema));
  if (schema.enum) return fc.constantFrom(...schema.enum);
  if (schema.const !== undefined) return fc.constant(schema.const);
  const members = schema.anyOf ?? schema.oneOf;
  if (members) return fc.oneof(...members.map((member) => acceptedValue(document, member)));
  if (Array.isArray(schema.type)) {
    return fc.oneof(...schema.type.map((type) => acceptedValue(document, { ...schema, type })));
  }
  switch (schema.type) {
    case "string":
      return stringOf(schema);
    case "integer":
      return integerIn(schema);
    case "number":
      return fc.double({ noNaN: true, noDefaultInfinity: true, min: schema.minimum, max: schema.maximum });
    case "boolean":
      return fc.boolean();
    case "null":
      return fc.constant(null);
    case "array":
      return fc.array(acceptedValue(document, schema.items ?? {}), { maxLength: 3 });
    case "object": {
      const properties = schema.properties ?? {};
      const model = Object.fromEntries(
        Object.entries(properties).map(([name, property]) => [name, acceptedValue(document, property)]),
      );
      return fc.record(model, { requiredKeys: (schema.required ?? []).filter((name) => name in properties) });
    }
    default:
      return fc.jsonValue();
  }
}
