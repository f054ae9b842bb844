import { signFileUrl } from "../media/signing";
import type { Product, Variant } from "./resource";

/** How long a `download_url` in a product read stays valid. */
export const downloadLinkLifetimeMs = 60 * 60 * 1000;

type FileObject = NonNullable<Product["file"]>;
const privateLocatorPath = /^\/files\/[0-9a-f-]{36}\/[0-9a-f-]{36}\/[^/]+$/;

async function signed(file: FileObject, secret: string, expiresAt: Date): Promise<FileObject> {
  let url: URL;
  try {
    url = new URL(file.url);
  } catch {
    return file;
  }
  // Only this service's private locators get a fresh signature; other URLs are kept as stored.
  if (!privateLocatorPath.test(url.pathname)) return file;
  return { ...file, download_url: await signFileUrl(secret, file.url, expiresAt) };
}

async function withFiles<T extends { file: FileObject | null; files: FileObject[] }>(
  owner: T,
  secret: string,
  expiresAt: Date,
) {
  return {
    ...owner,
    file: owner.file ? await signed(owner.file, secret, expiresAt) : null,
    files: await Promise.all(owner.files.map((file) => signed(file, secret, expiresAt))),
  };
}

/** The product with a signed, expiring `download_url` on every private file it lists (its variants' too). */
export async function withSignedDownloads<P extends Product>(product: P, secret: string, now = Date.now()): Promise<P> {
  const expiresAt = new Date(now + downloadLinkLifetimeMs);
  const variants: Variant[] = await Promise.all(
    product.variants.map((variant) => withFiles(variant, secret, expiresAt)),
  );
  return { ...(await withFiles(product, secret, expiresAt)), variants };
}
