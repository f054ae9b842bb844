/** The converter's name, compatibility date and flags, from converter/wrangler.toml. */
export function converterSettings(): { name: string; compatibilityDate: string; compatibilityFlags: string[] };
/**
 * Builds the converter with wrangler, once per process; its modules, the entry first, and the folder they are
 * named from.
 */
export function buildConverter(): Promise<{
  modulesRoot: string;
  modules: { type: "ESModule" | "CompiledWasm"; path: string }[];
}>;
