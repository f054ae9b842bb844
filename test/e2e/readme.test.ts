import { execFile } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, posix } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, inject, it } from "vitest";
// @ts-expect-error: plain ESM helper shared with `npm run dev`, no type declarations.
import { loadFixture } from "../../scripts/dev-server.mjs";
import { demoPublished, demoStoreId, demoToken, demoUnderNewIds } from "../support/demo";
import { expectJson, expectStatus } from "../support/responses";

const baseUrl = inject("baseUrl");
const run = promisify(execFile);
const repositoryRoot = fileURLToPath(new URL("../..", import.meta.url));
const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
const product = demoPublished;

/** The address `npm run dev` serves on by default, as the README writes it. */
const readmeApi = "http://127.0.0.1:8787/api/v1";
const marker = "<!-- tested: test/e2e/readme.test.ts -->";

/**
 * The fenced block right below each line that is the marker comment alone (docs/development.md names the
 * marker in its prose, which is not a mark), in order, with its language.
 */
function testedBlocks(): { language: string; body: string }[] {
  const lines = readme.split("\n");
  return lines.flatMap((line, index) => {
    if (line !== marker) return [];
    const fence = /^```(\w*)$/.exec(lines[index + 1] ?? "");
    const end = lines.indexOf("```", index + 2);
    if (!fence || end === -1) throw new Error(`README.md line ${index + 1}: no fenced block right below the marker`);
    return [{ language: fence[1] ?? "", body: lines.slice(index + 2, end).join("\n") }];
  });
}

/** Runs a snippet with bash from the repository's folder, as a reader pastes it; `node` is the project's. */
async function bash(script: string): Promise<string> {
  const { stdout } = await run("bash", ["-c", script], {
    cwd: repositoryRoot,
    env: { ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ""}` },
    timeout: 30_000,
  });
  return stdout;
}

describe("the README's opening is what the project does: its two set-up commands, and the demo token's figures as the API counts them", () => {
  it("starts with exactly the two set-up commands: run the service with demo data, run every test", () => {
    const opening = /^# [^\n]+\n\n```sh\n([\s\S]*?)\n```\n/.exec(readme)?.[1] ?? "";
    const commands = opening.split("\n").map((line) => line.replace(/\s+#.*$/, ""));
    expect(commands).toEqual(["npm install && npm run dev", "npm install && npm test"]);
    expect(JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")).scripts).toMatchObject({
      dev: expect.any(String),
      test: expect.any(String),
    });
  });

  it("its first figures are what the demo token sees: its products, their cross-sells, its subscriptions, its events", async () => {
    const figures =
      /\*\*(\d+) products\*\* \((\d+) published,\s+(\d+) draft[^;]*;\s+a fifth, archived, answers 404\), \*\*(\d+) cross-sells\*\*[^*]*\*\*(\d+) subscriptions\*\*,\s+(\d+) of them active, and \*\*(\d+) events\*\*/.exec(
        readme,
      );
    expect(figures, "the README's figures of the demo token").not.toBeNull();
    const [products, published, drafts, crossSells, subscriptions, active, events] = (figures ?? [])
      .slice(1)
      .map(Number);
    // The demo as `npm run dev` loads it, under ids of its own: the other e2e files change the shared demo
    // store (a publish makes an event), and they may run first.
    const fresh = demoUnderNewIds();
    await loadFixture(baseUrl, fresh.document);
    // Every figure is counted before anything is compared, so a mismatch shows them all.
    const storeProducts = fresh.document.products.filter((candidate) => candidate.store_id === fresh.storeId);
    const count = (status: string) => storeProducts.filter((candidate) => candidate.status === status).length;
    const headers = { Authorization: `Bearer ${fresh.token}` };
    const listed = await Promise.all(
      storeProducts.map(async (candidate) => {
        const response = await fetch(`${baseUrl}/api/v1/products/${candidate.id}/cross-sells?per_page=100`, {
          headers,
        });
        // An archived product is not found, like an unknown one (docs/api.md, "Products and drafts").
        if (candidate.status === "archived") {
          await expectStatus(response, 404);
          return 0;
        }
        return (await expectJson<{ pagination: { total: number } }>(response, 200)).pagination.total;
      }),
    );
    const total = async (path: string) =>
      (await expectJson<{ pagination: { total: number } }>(await fetch(`${baseUrl}/api/v1${path}`, { headers }), 200))
        .pagination.total;
    expect({ products, published, drafts, archived: 1, crossSells, subscriptions, active, events }).toEqual({
      products: storeProducts.length - count("archived"),
      published: count("published"),
      drafts: count("draft"),
      archived: count("archived"),
      crossSells: listed.reduce((sum, listTotal) => sum + listTotal, 0),
      subscriptions: await total("/subscriptions?per_page=1"),
      active: await total("/subscriptions?per_page=1&status=active"),
      events: await total("/webhook-events?per_page=1"),
    });
  });
});

describe("the README's tested snippets are the three it marks, and run as written against wrangler dev the calls npm run dev prints and the read answer what it says", () => {
  it("marks the three snippets it tests: what npm run dev prints, the read and the three-step upload", () => {
    expect(testedBlocks().map((block) => block.language)).toEqual(["text", "sh", "sh"]);
  });

  it('the curl calls npm run dev prints: a product, its cross-sells, a publish, the events it made ("Try:")', async () => {
    const printed = testedBlocks()[0]?.body ?? "";
    const calls = printed
      .split("\n")
      .map((line) => line.trim())
      .filter((line) => line.startsWith("curl "));
    expect(calls).toHaveLength(4);
    // One after another, as a reader pastes them: the events list must see the publish.
    const answers: unknown[] = [];
    for (const call of calls) answers.push(JSON.parse(await bash(call.replaceAll(readmeApi, `${baseUrl}/api/v1`))));
    const [read, crossSells, publish, events] = answers;

    // "read a product (the course "Kurs fotografii mobilnej")"
    expect(read).toMatchObject({ id: product.id, name: "Kurs fotografii mobilnej" });
    // "list its cross-sells" (`per_page=5`)
    const list = crossSells as { items: unknown[]; pagination: { per_page: number; total: number } };
    expect(list.items.length).toBeGreaterThan(0);
    expect(list.items.length).toBeLessThanOrEqual(5);
    expect(list.pagination.per_page).toBe(5);
    // "publish it"
    expect(publish).toMatchObject({ id: product.id, status: "published" });
    // "and list the events sent": the publish's event is there.
    const sent = events as { items: { type: string; product_id: string }[] };
    expect(sent.items).toContainEqual(expect.objectContaining({ type: "product.published", product_id: product.id }));
  });

  it("the read: the demo token's subscriptions two to a page, newest first, with the total the README states", async () => {
    const snippet = testedBlocks()[1]?.body ?? "";
    expect(snippet.split("\n")).toHaveLength(1);
    expect(snippet).toContain(readmeApi);
    const answer = JSON.parse(await bash(snippet.replaceAll(readmeApi, `${baseUrl}/api/v1`))) as {
      items: { created_at: string }[];
      pagination: unknown;
    };
    // "It prints {"items":[…],"pagination":{"current_page":1,"total_pages":150,"per_page":2,"total":300}}"
    const printed = /"pagination":(\{[^}]*\})\}`/.exec(readme)?.[1] ?? "";
    expect(answer.pagination).toEqual(JSON.parse(printed));
    expect(answer.items).toHaveLength(2);
    const created = answer.items.map((item) => item.created_at);
    expect(created).toEqual([...created].sort().reverse());
  });
});

describe("the README's three-step upload, run as written against wrangler dev, hosts the image as the README shows", () => {
  it("the three-step upload: a reservation, an empty PUT, the hosted WebP (only the API line changed)", async () => {
    const snippet = testedBlocks()[2]?.body ?? "";
    const lines = snippet.split("\n");
    const apiLine = lines.findIndex((line) => line.startsWith(`API=${readmeApi} `));
    expect(apiLine).toBe(0);
    // The snippet's own token and store are the demo fixture's: nothing else is substituted.
    expect(snippet).toContain(`TOKEN=${demoToken} `);
    expect(snippet).toContain(`STORE=${demoStoreId} `);
    lines[apiLine] = (lines[apiLine] ?? "").replace(readmeApi, `${baseUrl}/api/v1`);
    const output = await bash(lines.join("\n"));

    const printed = output.split("\n").filter(Boolean);
    // 1. the reservation (the echo); 2. nothing; 3. the hosted file.
    expect(printed).toHaveLength(2);
    const reserved = JSON.parse(printed[0] ?? "");
    expect(reserved).toEqual({
      id: expect.any(String),
      expires_at: expect.any(String),
      upload_request: {
        method: "PUT",
        url: `${baseUrl}/api/v1/media-uploads/${reserved.id}`,
        headers: {
          "X-Upload-Token": expect.stringMatching(/^ut1\./),
          "Content-Type": "image/jpeg",
          "Content-Length": "6412",
        },
      },
    });
    const hosted = JSON.parse(printed[1] ?? "");
    expect(hosted).toMatchObject({
      name: "hopper.jpg",
      file_url: expect.stringMatching(new RegExp(`^${baseUrl}/media/${demoStoreId}/.+\\.webp$`)),
      type: "image",
      width: 128,
      height: 128,
      srcset: expect.stringMatching(/ 128w$/),
      sources: [
        { type: "image/avif", srcset: expect.stringMatching(/\?format=avif 128w$/) },
        { type: "image/webp", srcset: expect.stringMatching(/ 128w$/) },
      ],
      placeholder: expect.any(String),
      placeholder_url: expect.stringMatching(/^data:image\/png;base64,/),
      dominant_color: expect.stringMatching(/^#[0-9a-f]{6}$/),
    });
    // "file_url opens in a browser"
    const file = await fetch(hosted.file_url);
    await expectStatus(file, 200);
    expect(file.headers.get("Content-Type")).toBe("image/webp");
  });
});

/** A Markdown page's headings as GitHub anchors them, outside fenced blocks. */
function anchors(markdown: string): Set<string> {
  const outside = markdown.replace(/^```[\s\S]*?^```/gm, "");
  const headings = [...outside.matchAll(/^#{1,6} (.+)$/gm)].map(([, heading]) => heading ?? "");
  return new Set(
    headings.map((heading) =>
      heading
        .trim()
        .toLowerCase()
        .replace(/[^\p{L}\p{N}_\- ]/gu, "")
        .replaceAll(" ", "-"),
    ),
  );
}

describe("the README as a front door, and the pages it leads to", () => {
  const docs = readdirSync(join(repositoryRoot, "docs")).filter((name) => name.endsWith(".md"));

  it("is at most 200 lines", () => {
    expect(readme.split("\n").length).toBeLessThanOrEqual(200);
  });

  it("indexes every page of docs/", () => {
    const index = readme.slice(readme.indexOf("\n## Documentation\n"));
    expect(index.length).toBeLessThan(readme.length);
    for (const page of docs) expect(index).toContain(`](docs/${page})`);
  });

  it("every relative link of the README and of docs/ names a file that exists, and a heading it has", () => {
    const pages = ["README.md", ...docs.map((page) => `docs/${page}`)];
    const broken = pages.flatMap((page) => {
      const text = readFileSync(join(repositoryRoot, page), "utf8").replace(/^```[\s\S]*?^```/gm, "");
      return [...text.matchAll(/\]\(([^)\s]+)\)/g)].flatMap(([, target = ""]) => {
        if (/^[a-z]+:/.test(target)) return [];
        const [path = "", anchor] = target.split("#");
        const file = path === "" ? page : posix.join(posix.dirname(page), path);
        if (!existsSync(join(repositoryRoot, file))) return [`${page}: ${target} (no such file)`];
        if (anchor && file.endsWith(".md") && !anchors(readFileSync(join(repositoryRoot, file), "utf8")).has(anchor))
          return [`${page}: ${target} (no such heading)`];
        return [];
      });
    });
    expect(broken).toEqual([]);
  });

  it("the layout map names only folders and files that exist", () => {
    const table = readme.slice(readme.indexOf("| Rule or feature | Where |"), readme.indexOf("\n## Documentation\n"));
    const rows = table.split("\n").filter((line) => line.startsWith("| ") && !line.startsWith("| Rule or feature"));
    expect(rows.length).toBeGreaterThan(20);
    const roots = /^(src|converter|test|scripts|openapi|migrations|fixtures|\.ci)\/|^[\w.-]+\.(toml|example)$/;
    const missing = rows.flatMap((row) => {
      const where = row.split(" | ")[1] ?? "";
      let folder = "";
      return [...where.matchAll(/`([^`]+)`/g)].flatMap(([, token = ""]) => {
        // Placeholders and globs (`test/<feature>/`, `bench*.mjs`) name no one file.
        if (/[<*\s]/.test(token)) return [];
        // A name without its folder is in the folder named last, or beside it (`prepare/`, `put/`).
        const candidates = roots.test(token)
          ? [token]
          : [posix.join(folder, token), posix.join(posix.dirname(folder), token)];
        const path = candidates.find((candidate) => existsSync(join(repositoryRoot, candidate)));
        if (path === undefined) return [`${token} (in ${folder || "the repository"})`];
        if (path.endsWith("/")) folder = path;
        return [];
      });
    });
    expect(missing).toEqual([]);
  });
});
