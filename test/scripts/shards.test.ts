import { copyFile, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { writeShardedConfig } from "../../scripts/lib/shards.mjs";
import { projectRoot } from "../../scripts/lib/wrangler.mjs";

describe("wrangler.shards.toml: the configuration with the shard bindings (scripts/lib/shards.mjs)", () => {
  let dir: string;
  let path: string;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "shards-config-"));
    await copyFile(join(projectRoot, "wrangler.toml"), join(dir, "wrangler.toml"));
    path = join(dir, "wrangler.shards.toml");
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("adds one D1 binding per shard, named after the global database, to wrangler.toml's text", async () => {
    await writeShardedConfig(2, "sklep", path);
    const text = await readFile(path, "utf8");
    expect(text).toContain(await readFile(join(dir, "wrangler.toml"), "utf8").then((base) => base.trimEnd()));
    expect(text).toContain('binding = "SHARD_0"\ndatabase_name = "sklep-shard-0"');
    expect(text).toContain('binding = "SHARD_1"\ndatabase_name = "sklep-shard-1"');
    expect(text).not.toContain("SHARD_2");
  });

  it("leaves a file that already says the same untouched (a running wrangler dev restarts on any write), and rewrites one that differs", async () => {
    await writeShardedConfig(2, undefined, path);
    const written = await stat(path);
    await writeShardedConfig(2, undefined, path);
    // A write replaces the file (written beside it, then renamed over it): a new inode.
    const after = await stat(path);
    expect([after.ino, after.mtimeMs]).toEqual([written.ino, written.mtimeMs]);
    await writeFile(path, "# edited by hand\n");
    await writeShardedConfig(2, undefined, path);
    expect((await stat(path)).ino).not.toBe(written.ino);
    expect(await readFile(path, "utf8")).toContain('binding = "SHARD_1"');
  });
});
