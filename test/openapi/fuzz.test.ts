import fc from "fast-check";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import committed from "../../openapi/openapi.json";
import type { FixtureProduct, FixtureVariant } from "../../src/dev/fixture-schema";
import { uuid } from "../support/factories";
import { origin } from "../support/http";
import {
  acceptedValue,
  type Operation,
  openApiDocument,
  operationsOf,
  type Parameter,
  resolve,
  type Schema,
  validatorOf,
} from "../support/openapi";

/*
 * Every operation of the committed document (test/openapi/document.test.ts keeps it equal to the served one)
 * is called with requests generated from the document: path ids that exist, that do not and that are not ids;
 * query values the schema accepts, refuses or leaves empty; tokens and store headers that fit or do not;
 * bodies the schema accepts, bent out of shape, or not JSON at all. Whatever is sent, the answer must be a
 * status the operation documents, never a 5xx, with a body that its schema for that status describes exactly
 * (no field missing, none undocumented).
 *
 * Each operation runs for at most `msPerOperation`. A failure names the request and the answer, and fast-check
 * prints the seed and path that replay it (`fc.check(..., { seed, path })`); every run draws new requests.
 */

const msPerOperation = 2_500;
/** A run that managed fewer requests than this in its time explored too little to count as passing. */
const minRuns = 25;

const openapi = openApiDocument(committed);

import {
  type Answer,
  fixture,
  loadWorld,
  otherStore,
  prepareWorld,
  type Reservation,
  send,
  store,
  tokens,
  uploads,
  worldEvents,
} from "../support/fuzz-world";

beforeAll(prepareWorld, 60_000);

// Path parameters: values that address something, found by walking the path through the world.

type Node =
  | { kind: "root" }
  | { kind: "product"; product: FixtureProduct; draft: boolean }
  | { kind: "variant"; variant: FixtureVariant }
  | { kind: "items"; items: [string, Node][] }
  | { kind: "leaf" };

const fieldItems = (list: { name: string }[] | null | undefined): Node => ({
  kind: "items",
  items: (list ?? []).map((field): [string, Node] => [field.name, { kind: "leaf" }]),
});
const variantItems = (list: FixtureVariant[]): Node => ({
  kind: "items",
  items: list.map((variant): [string, Node] => [variant.id, { kind: "variant", variant }]),
});

/** Where a literal path segment leads from `node`; undefined when nothing is there (no draft). */
function step(node: Node, segment: string): Node | undefined {
  switch (node.kind) {
    case "root":
      if (segment === "products") {
        return {
          kind: "items",
          items: fixture.products.map((product): [string, Node] => [
            product.id,
            { kind: "product", product, draft: false },
          ]),
        };
      }
      if (segment === "product-variants") return variantItems(fixture.products.flatMap((product) => product.variants));
      if (segment === "webhook-events") {
        return { kind: "items", items: worldEvents.map((event): [string, Node] => [event.id, { kind: "leaf" }]) };
      }
      if (segment === "media-uploads") {
        const all = [...uploads.stored, ...uploads.reserved];
        return { kind: "items", items: all.map((upload): [string, Node] => [upload.id, { kind: "leaf" }]) };
      }
      return { kind: "leaf" };
    case "product": {
      const { product } = node;
      // The overlay keeps the live lists the draft does not replace (src/dev/fixtures.ts, draftDocument).
      const draft = node.draft ? product.draft : undefined;
      if (segment === "draft") return product.draft ? { kind: "product", product, draft: true } : undefined;
      if (segment === "custom-fields") {
        return fieldItems(draft?.custom_fields !== undefined ? draft.custom_fields : product.custom_fields);
      }
      if (segment === "waitlist-custom-fields") {
        return fieldItems(
          draft?.waitlist_custom_fields !== undefined ? draft.waitlist_custom_fields : product.waitlist_custom_fields,
        );
      }
      if (segment === "variants") return variantItems(draft?.variants ?? product.variants);
      return node;
    }
    case "variant":
      return segment === "custom-fields" ? fieldItems(node.variant.custom_fields) : node;
    default:
      return node;
  }
}

/** Every assignment of the path's parameters that names something in the world. */
function bindings(path: string): Record<string, string>[] {
  let states: { values: Record<string, string>; node: Node }[] = [{ values: {}, node: { kind: "root" } }];
  for (const segment of path.split("/").filter(Boolean)) {
    const parameter = /^\{(.+)\}$/.exec(segment)?.[1];
    states = states.flatMap(({ values, node }) => {
      if (!parameter) {
        const next = step(node, segment);
        return next ? [{ values, node: next }] : [];
      }
      if (node.kind !== "items") return [];
      return node.items.map(([value, child]) => ({ values: { ...values, [parameter]: value }, node: child }));
    });
  }
  return states.map((state) => state.values);
}

/** Strings that are not ids of any kind (a path segment of their own once encoded; `.` and `..` would leave it). */
const notAnId = fc
  .oneof(
    fc.string({ minLength: 1, maxLength: 50, unit: "grapheme" }),
    fc.constantFrom(
      "0",
      "-1",
      "null",
      "undefined",
      "%",
      "{id}",
      "00000000-0000-0000-0000-00000000000g",
      "a".repeat(300),
    ),
    fc.uuid().map((id) => `${id}x`),
  )
  .filter((value) => value !== "." && value !== "..");

function pathValues(
  path: string,
  parameters: Parameter[],
  reservation?: Reservation,
): fc.Arbitrary<Record<string, string>> {
  const addressed = reservation
    ? Array.from({ length: reservation.parts?.count ?? 1 }, (_, index) => ({
        id: reservation.id,
        part_number: String(index + 1),
      }))
    : bindings(path);
  const independent = fc.record(
    Object.fromEntries(
      parameters.map((parameter) => [
        parameter.name,
        fc.oneof(acceptedValue(openapi, parameter.schema ?? { type: "string" }).map(String), notAnId),
      ]),
    ),
  );
  const existing = addressed.length
    ? fc.tuple(fc.constantFrom(...addressed), fc.boolean()).map(([values, upper]) =>
        // Ids are matched whatever their letter case.
        upper && "id" in values ? { ...values, id: String(values.id).toUpperCase() } : values,
      )
    : independent;
  return fc.oneof({ weight: 7, arbitrary: existing }, { weight: 3, arbitrary: independent });
}

// ---------------------------------------------------------------------------------------------------------
// Query strings, headers and bodies.

function queryValue(parameter: Parameter): fc.Arbitrary<string[]> {
  const accepted = acceptedValue(openapi, parameter.schema ?? {}).map(String);
  // A list has many parameters: each is refused rarely, so that calls with every one accepted are common too.
  const value = fc.oneof(
    { weight: 10, arbitrary: accepted },
    { weight: 1, arbitrary: fc.constant("") },
    { weight: 1, arbitrary: fc.string({ maxLength: 20, unit: "grapheme" }) },
    { weight: 1, arbitrary: fc.constantFrom("-1", "0", "1.5", "1e3", "0x10", "99999999999999999999", " 1", "true") },
  );
  // Absent most often; sometimes repeated, whose first occurrence counts.
  return fc.oneof(
    { weight: 6, arbitrary: fc.constant<string[]>([]) },
    { weight: 4, arbitrary: value.map((one) => [one]) },
    { weight: 1, arbitrary: fc.tuple(value, value) },
  );
}

/** Printable ASCII header values (what fetch lets a client send; workerd warns about anything beyond). */
const headerText = fc.string({
  unit: fc.integer({ min: 0x20, max: 0x7e }).map((code) => String.fromCharCode(code)),
  maxLength: 60,
});
const isHeaderText = (value: string) => /^[\x20-\x7e]*$/.test(value);

type Headers = Record<string, string>;

function authorization(operation: Operation): fc.Arbitrary<Headers> {
  if (!operation.security?.some((requirement) => "bearerAuth" in requirement)) return fc.constant({});
  const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
  return fc.oneof(
    { weight: 10, arbitrary: fc.constant(bearer(tokens.all)) },
    { weight: 1, arbitrary: fc.constant(bearer(tokens.readOnly)) },
    { weight: 2, arbitrary: fc.constant(bearer(tokens.bothStores)) },
    { weight: 1, arbitrary: fc.constant({}) },
    { weight: 1, arbitrary: fc.uuid().map((token) => bearer(`unknown-${token}`)) },
    { weight: 1, arbitrary: headerText.map((value) => ({ Authorization: value })) },
  );
}

/**
 * The exact length of what a PUT of `reservation` must carry: the whole file, or the addressed part. A part
 * number outside the plan has no length of its own; the file's is as good a guess as any.
 */
function expectedLength(reservation: Reservation, partNumber?: string): number {
  const parts = reservation.parts;
  const number = Number(partNumber);
  if (!parts || !Number.isInteger(number) || number < 1 || number > parts.count) return reservation.size;
  return number < parts.count ? parts.size : reservation.size - parts.size * (parts.count - 1);
}

function headerValue(parameter: Parameter, reservation?: Reservation, length?: number) {
  const other = fc.oneof(
    headerText,
    acceptedValue(openapi, parameter.schema ?? {})
      .map(String)
      .filter(isHeaderText),
  );
  const fitting = (value: string) =>
    fc.oneof(
      { weight: 8, arbitrary: fc.constant<string | undefined>(value) },
      { weight: 1, arbitrary: fc.constant(undefined) },
      { weight: 2, arbitrary: other },
    );
  switch (parameter.name.toLowerCase()) {
    case "x-service-store":
      return fc.oneof(
        { weight: 6, arbitrary: fc.constantFrom<string | undefined>(store?.id, store?.id.toUpperCase()) },
        { weight: parameter.required ? 1 : 4, arbitrary: fc.constant(undefined) },
        { weight: 1, arbitrary: fc.constantFrom(otherStore?.id, uuid(), "") },
        { weight: 1, arbitrary: headerText },
      );
    case "x-upload-token":
      return fitting(reservation?.token ?? "");
    case "content-type":
      return fitting(reservation?.contentType ?? "application/json");
    case "content-length":
      return fitting(String(length ?? 0));
    default:
      return fc.option(other, { nil: undefined, freq: 3 });
  }
}

type Body = { contentType?: string; data?: string | Uint8Array };

/** A JSON body over the API's 1 MiB limit (app.ts): one shared string, so generating it costs nothing. */
const oversized = JSON.stringify({ padding: "x".repeat(1024 * 1024) });

/** JSON the schema accepts, then the same bent: fields missing, of the wrong type, unknown, or no object at all. */
function jsonBody(schema: Schema): fc.Arbitrary<Body> {
  const accepted = acceptedValue(openapi, schema);
  const json = (value: unknown) => ({ contentType: "application/json", data: JSON.stringify(value) });
  const names = Object.keys(resolve(openapi, schema).properties ?? {});
  const bent = accepted.chain((value) => {
    if (typeof value !== "object" || value === null || names.length === 0) return fc.constant(value);
    return fc.oneof(
      fc
        .constantFrom(...names)
        .map((name) => Object.fromEntries(Object.entries(value).filter(([key]) => key !== name))),
      fc.tuple(fc.constantFrom(...names), fc.jsonValue()).map(([name, wrong]) => ({ ...value, [name]: wrong })),
      fc
        .tuple(fc.string({ minLength: 1, maxLength: 12 }), fc.jsonValue())
        .map(([name, extra]) => ({ ...value, [name]: extra })),
    );
  });
  return fc.oneof(
    { weight: 8, arbitrary: accepted.map(json) },
    { weight: 3, arbitrary: bent.map(json) },
    {
      weight: 1,
      arbitrary: fc
        .jsonValue()
        .filter((value) => typeof value !== "object" || value === null)
        .map(json),
    },
    { weight: 1, arbitrary: fc.array(fc.jsonValue(), { maxLength: 2 }).map(json) },
    {
      weight: 1,
      arbitrary: fc.string({ maxLength: 40 }).map((data) => ({ contentType: "application/json", data: `{${data}` })),
    },
    { weight: 1, arbitrary: fc.constant({ contentType: "application/json", data: "" }) },
    { weight: 1, arbitrary: fc.constant({ contentType: "application/json", data: oversized }) },
    { weight: 1, arbitrary: accepted.map((value) => ({ contentType: "text/plain", data: JSON.stringify(value) })) },
    { weight: 1, arbitrary: accepted.map((value) => ({ data: JSON.stringify(value) })) },
  );
}

/** Bytes of the expected length most of the time; shorter, longer or none otherwise. */
function binaryBody(length: number): fc.Arbitrary<Body> {
  // Random content up to 64 KiB; a larger body (a whole part) is zeros, which cost nothing to draw.
  const bytes = (size: number) =>
    size > 65_536 ? fc.constant(new Uint8Array(size)) : fc.uint8Array({ minLength: size, maxLength: size });
  return fc.oneof(
    { weight: 6, arbitrary: bytes(length).map((data) => ({ data })) },
    {
      weight: 2,
      arbitrary: fc
        .nat({ max: length * 2 })
        .chain(bytes)
        .map((data) => ({ data })),
    },
    { weight: 1, arbitrary: fc.constant({}) },
  );
}

function body(method: string, operation: Operation, length: number): fc.Arbitrary<Body> {
  if (method === "get") return fc.constant({});
  const content = operation.requestBody?.content ?? {};
  const json = content["application/json"]?.schema;
  if (json) return operation.requestBody?.required ? jsonBody(json) : fc.oneof(fc.constant({}), jsonBody(json));
  if (Object.keys(content).length > 0) return binaryBody(length);
  // No body documented: sometimes one is sent anyway, which the route must ignore or refuse.
  const asJson = (value: unknown) => ({ contentType: "application/json", data: JSON.stringify(value) });
  return fc.oneof(
    { weight: 12, arbitrary: fc.constant({}) },
    { weight: 2, arbitrary: fc.jsonValue().map(asJson) },
    { weight: 1, arbitrary: fc.constant({ contentType: "application/json", data: oversized }) },
  );
}

type Generated = { path: string; query: [string, string][]; headers: Headers; body: Body };

/** A whole request for the operation; for the upload token's operations, aimed at one of the reservations. */
function requestFor(path: string, method: string, operation: Operation): fc.Arbitrary<Generated> {
  const parameters = operation.parameters ?? [];
  const ofKind = (kind: Parameter["in"]) => parameters.filter((parameter) => parameter.in === kind);
  const byUploadToken =
    operation.security?.some((requirement) => "uploadToken" in requirement) ||
    ofKind("header").some((parameter) => parameter.name.toLowerCase() === "x-upload-token");
  const partPut = ofKind("path").some((parameter) => parameter.name === "part_number");
  const pool = uploads.reserved.filter((reservation) => Boolean(reservation.parts) === partPut);
  const reservation = byUploadToken ? fc.constantFrom(...pool) : fc.constant(undefined);

  return reservation.chain((chosen) =>
    pathValues(path, ofKind("path"), chosen).chain((values) => {
      const length = chosen ? expectedLength(chosen, partPut ? values.part_number : undefined) : 0;
      const queryParameters = ofKind("query");
      const headerParameters = ofKind("header");
      return fc.record({
        path: fc.constant(path.replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(values[name] ?? ""))),
        query: fc
          .tuple(
            fc.tuple(...queryParameters.map(queryValue)),
            fc.option(fc.tuple(fc.string({ minLength: 1, maxLength: 10 }), fc.string({ maxLength: 10 })), {
              nil: undefined,
            }),
          )
          .map(([lists, extra]) => {
            const pairs = queryParameters.flatMap((parameter, index) =>
              (lists[index] ?? []).map((value): [string, string] => [parameter.name, value]),
            );
            return extra ? [...pairs, extra] : pairs;
          }),
        headers: fc
          .tuple(authorization(operation), fc.tuple(...headerParameters.map((p) => headerValue(p, chosen, length))))
          .map(([auth, headerValues]) => {
            const headers: Headers = { ...auth };
            headerParameters.forEach((parameter, index) => {
              const value = headerValues[index];
              if (typeof value === "string") headers[parameter.name] = value;
            });
            return headers;
          }),
        body: body(method, operation, length),
      });
    }),
  );
}

function toRequest(method: string, generated: Generated): Request {
  const url = new URL(`${origin}/api/v1${generated.path}`);
  for (const [name, value] of generated.query) url.searchParams.append(name, value);
  const headers = new Headers(generated.headers);
  const { contentType, data } = generated.body;
  if (contentType && !headers.has("Content-Type")) headers.set("Content-Type", contentType);
  return new Request(url, { method: method.toUpperCase(), headers, body: data });
}

function describeRequest(method: string, generated: Generated): string {
  const { data } = generated.body;
  const shown = typeof data === "string" ? data.slice(0, 300) : data ? `<${data.length} bytes>` : "<none>";
  const headers = JSON.stringify(generated.headers);
  return `${method.toUpperCase()} ${toRequest(method, generated).url} headers=${headers} body=${shown}`;
}

// ---------------------------------------------------------------------------------------------------------
// The oracle: the answer is one the document gives for the operation.

const validators = new Map<string, ReturnType<typeof validatorOf>>();

function problemWith(name: string, operation: Operation, answer: Answer): string | undefined {
  if (answer.status >= 500) return `a ${answer.status}`;
  const response = operation.responses[String(answer.status)];
  if (!response) return `status ${answer.status}, which the operation does not document`;
  const media = Object.entries(response.content ?? {});
  if (media.length === 0) return answer.text === "" ? undefined : `a body on a ${answer.status} documented without one`;
  const [mediaType, { schema }] = media[0] as [string, { schema?: Schema }];
  if (!answer.contentType?.startsWith(mediaType)) return `Content-Type ${answer.contentType}, documented ${mediaType}`;
  const key = `${name} ${answer.status}`;
  const validator = validators.get(key) ?? validatorOf(openapi, schema ?? {});
  validators.set(key, validator);
  let parsed: unknown;
  try {
    parsed = JSON.parse(answer.text);
  } catch {
    return "a body that is not JSON";
  }
  const result = validator.safeParse(parsed);
  return result.success ? undefined : `a body off its schema: ${JSON.stringify(result.error.issues.slice(0, 3))}`;
}

describe("every operation fuzzed from the OpenAPI document", () => {
  // Deleted drafts and fields, published products: each operation starts from the same world.
  beforeEach(loadWorld);

  for (const { path, method, operation } of operationsOf(openapi)) {
    const name = operation.operationId ?? `${method} ${path}`;
    it(`${name}: answers only documented statuses, never a 5xx, with bodies exactly as documented`, async () => {
      const statuses = new Map<number, number>();
      const details = await fc.check(
        fc.asyncProperty(requestFor(path, method, operation), async (generated) => {
          const answer = await send(toRequest(method, generated));
          statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
          const problem = problemWith(`${method} ${path}`, operation, answer);
          if (problem) {
            throw new Error(`${describeRequest(method, generated)}\nanswered ${problem}\n${answer.text.slice(0, 500)}`);
          }
        }),
        { numRuns: 1_000, plugins: [fc.interruptAfterTimeLimit(msPerOperation)] },
      );
      if (details.failed) {
        const cause = details.errorInstance instanceof Error ? details.errorInstance.message : details.errorInstance;
        throw new Error(`${cause}\n\n${fc.defaultReportMessage(details)}`);
      }
      expect(details.numRuns, "requests made within the time limit").toBeGreaterThanOrEqual(minRuns);
      // Both sides were reached: calls that did what the operation is for, and calls it refused.
      const seen = [...statuses.keys()].sort();
      expect(
        seen.some((status) => status < 300),
        `statuses seen: ${seen}`,
      ).toBe(true);
      expect(
        seen.some((status) => status >= 400),
        `statuses seen: ${seen}`,
      ).toBe(true);
    }, 30_000);
  }
});
