// Copies the browser files the Worker serves as static assets out of their pinned npm packages, so no page
// of the service loads code from a third-party host and every deploy serves the version in package-lock.json.
// Runs after `npm install` (postinstall); the copies are build output, not committed (public/vendor is ignored).
import { cp, mkdir, rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const target = join(root, "public", "vendor");

/** [package file, path under public/vendor]. */
const files = [
  ["node_modules/@scalar/api-reference/dist/browser/standalone.js", "scalar/standalone.js"],
  ["node_modules/uppy/dist/uppy.min.mjs", "uppy/uppy.min.mjs"],
  ["node_modules/uppy/dist/uppy.min.css", "uppy/uppy.min.css"],
];

await rm(target, { recursive: true, force: true });
for (const [from, to] of files) {
  await mkdir(dirname(join(target, to)), { recursive: true });
  await cp(join(root, from), join(target, to));
}
console.log(`vendor assets: ${files.length} files copied to public/vendor`);
