import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, inject, it } from "vitest";
import { demoPublished, demoStoreId, demoToken } from "../support/demo";
import { expectStatus } from "../support/responses";

const baseUrl = inject("baseUrl");
const run = promisify(execFile);
const repositoryRoot = fileURLToPath(new URL("../..", import.meta.url));
const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
const product = demoPublished;

/** The address `npm run dev` serves on by default, as the README writes it. */
const readmeApi = "http://127.0.0.1:8787/api/v1";
const marker = "<!-- tested: test/e2e/readme.test.ts -->";

/**
 * The fenced block right below each line that is the marker comment alone (the testing section names the
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

describe("the README's snippets, run as written against wrangler dev", () => {
  it("marks the two snippets it tests: what npm run dev prints and the three-step upload", () => {
    expect(testedBlocks().map((block) => block.language)).toEqual(["text", "sh"]);
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

  it("the three-step upload: a reservation, an empty PUT, the hosted WebP (only the API line changed)", async () => {
    const snippet = testedBlocks()[1]?.body ?? "";
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
