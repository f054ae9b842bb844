/** Where the converter's build goes. */
export const converterBuildDir: string;
/** The converter's name, compatibility date and flags, from converter/wrangler.toml. */
export function converterSettings(): { name: string; compatibilityDate: string; compatibilityFlags: string[] };
/** Builds the converter with wrangler; its modules, the entry first. */
export function buildConverter(): { type: "ESModule" | "CompiledWasm"; path: string }[];
