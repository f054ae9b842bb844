export const localShardCount: number;
export const shardedConfigPath: string;
export function shardBinding(n: number): string;
export function shardDatabaseName(databaseName: string, n: number): string;
export function existingShardCount(databaseName: string, names: string[]): number;
export function leastLoadedShard(counts: { shard: string; stores: number }[], count: number): string | null;
export function shardedConfigText(configText: string, databaseName: string, count: number): string;
export function writeShardedConfig(count: number, databaseName?: string, path?: string): Promise<string>;
