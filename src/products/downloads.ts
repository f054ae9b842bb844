import { uuidSource } from "../lib/ids";
import { signFileUrl } from "../media/signing";
import type { Product, Variant } from "./resource";

/** How long a `download_url` in a product read stays valid. */
const downloadLinkLifetimeMs = 60 * 60 * 1000;

/** Whose locators a product read may sign: the request's origin and the product's store. */
export type SigningScope = { secret: string | null; origin: string; storeId: string };

type FileObject = NonNullable<Product["file"]>;
const uploadIdAndFilename = new RegExp(`^${uuidSource}/[^/]+$`);

/** Whether `url` is a private locator of one of the store's own uploads, served by this origin. */
function isOwnLocator(url: string, scope: SigningScope): boolean {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  const storePrefix = `/files/${scope.storeId}/`;
  return (
    parsed.origin === scope.origin &&
    parsed.pathname.startsWith(storePrefix) &&
    uploadIdAndFilename.test(parsed.pathname.slice(storePrefix.length))
  );
}

async function signed(file: FileObject, scope: SigningScope, expiresAt: Date): Promise<FileObject> {
  // Signing another store's or another host's URL would hand out a working link to bytes this
  // product does not own, so those URLs are kept exactly as stored.
  if (!isOwnLocator(file.url, scope)) return file;
  // Without a signing secret no link can be issued, but the read still answers (docs/api.md, "Configuration states").
  if (scope.secret === null) return { ...file, download_url: null };
  return { ...file, download_url: await signFileUrl(scope.secret, file.url, expiresAt) };
}

async function withFiles<T extends { file: FileObject | null; files: FileObject[] }>(
  owner: T,
  scope: SigningScope,
  expiresAt: Date,
) {
  return {
    ...owner,
    file: owner.file ? await signed(owner.file, scope, expiresAt) : null,
    files: await Promise.all(owner.files.map((file) => signed(file, scope, expiresAt))),
  };
}

/** The product with a signed, expiring `download_url` on every file that is one of its store's own private uploads. */
export async function withSignedDownloads<P extends Product>(
  product: P,
  scope: SigningScope,
  now = Date.now(),
): Promise<P> {
  const expiresAt = new Date(now + downloadLinkLifetimeMs);
  const variants: Variant[] = await Promise.all(
    product.variants.map((variant) => withFiles(variant, scope, expiresAt)),
  );
  return { ...(await withFiles(product, scope, expiresAt)), variants };
}
