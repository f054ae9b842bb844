CREATE TABLE `store_directory` (
	`store_id` text PRIMARY KEY NOT NULL,
	`shard` text NOT NULL,
	`version` integer DEFAULT 1 NOT NULL,
	`placed_at` integer NOT NULL,
	FOREIGN KEY (`store_id`) REFERENCES `stores`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `store_directory_shard` ON `store_directory` (`shard`);