import { storeCoordinator } from "./coordinator/client";

/**
 * What media/ uses of uploads, and all it may use (.dependency-cruiser.cjs, `media-through-uploads-face`):
 * the store coordinator's claims on making a width. What both sides share, the R2 key scheme and hosting in
 * place, is in src/storage/; the making of a width is the converter Worker's (src/converter/).
 */

/**
 * The store's coordinator as `?width=` uses it: one request at a time makes a width (`claimWidth`), renews its
 * claim while it makes it (`renewWidth`), and reports the end of its attempt (`finishWidth`);
 * docs/responsive-images.md.
 */
export function widthClaims(env: Env, storeId: string) {
  const coordinator = storeCoordinator(env, storeId);
  return {
    claim: (key: string, waitedOn: number | null, notStored: boolean) =>
      coordinator.claimWidth(key, waitedOn, notStored),
    renew: (key: string, attempt: number) => coordinator.renewWidth(key, attempt),
    finish: (key: string, attempt: number, made: boolean) => coordinator.finishWidth(key, attempt, made),
  };
}
