// Types of token-create.mjs for the TypeScript tests that import it.
import type { RunWrangler } from "./lib/wrangler.mjs";

export type TokenOptions = {
  help: false;
  abilities: string[];
  storeIds: string[];
  name: string | undefined;
  local: boolean;
  persistTo: string | undefined;
  json: boolean;
};
export type MadeToken = {
  token: string;
  storeIds: string[];
  abilities: string[];
  /** `shard`: the shard a new store was placed on, when the database has shards. */
  createdStores: { id: string; name: string; shard?: string }[];
};
export declare const usage: string;
export declare function parseTokenArgs(argv: string[]): TokenOptions | { help: true };
export declare function createToken(
  options: TokenOptions,
  dependencies?: { run?: RunWrangler; newId?: () => string; config?: Record<string, unknown> },
): Promise<MadeToken>;
export declare function describeToken(made: MadeToken, options: { local: boolean }): string;
export declare function main(
  argv: string[],
  dependencies?: { run?: RunWrangler; print?: (text: string) => void },
): Promise<void>;
