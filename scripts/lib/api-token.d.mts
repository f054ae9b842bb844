// Types of api-token.mjs for the TypeScript tests that import it.
export declare const ABILITIES: readonly string[];
export declare class UsageError extends Error {}
export declare function parseStoreIds(values: string[]): string[];
export declare function parseAbilities(value: string | undefined): string[];
export declare function parseStoreName(value: string): string;
export declare function newTokenSecret(): string;
export declare function tokenHash(secret: string): Promise<string>;
export declare function sqlString(value: unknown): string;
export declare function existingStoresQuery(storeIds: string[]): string;
export declare function storeStatements(newStores: { id: string; name: string }[], now?: number): string[];
export declare const directoryCountsQuery: string;
export declare function tokenStatements(input: {
  secret: string;
  storeIds: string[];
  abilities: string[];
  newStores?: { id: string; name: string; shard?: string | null }[];
  now?: number;
}): Promise<string[]>;
export const uuidPattern: RegExp;
