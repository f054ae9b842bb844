CREATE TABLE `idempotency_keys` (
	`store_id` text NOT NULL,
	`token_hash` text NOT NULL,
	`key` text NOT NULL,
	`fingerprint` text NOT NULL,
	`attempt` integer NOT NULL,
	`lease_until` integer NOT NULL,
	`changed` integer DEFAULT false NOT NULL,
	`status` integer,
	`headers` text,
	`body` text,
	`expires_at` integer NOT NULL,
	PRIMARY KEY(`store_id`, `token_hash`, `key`)
);
--> statement-breakpoint
CREATE INDEX `idempotency_keys_expires` ON `idempotency_keys` (`expires_at`);--> statement-breakpoint
-- The store-move fence of migrations/0004 over the new table: a fenced store's records neither change nor appear.
CREATE TRIGGER `idempotency_keys_fence_insert` BEFORE INSERT ON `idempotency_keys` FOR EACH ROW WHEN EXISTS (SELECT 1 FROM `store_fences` AS f WHERE f.`store_id` = NEW.`store_id`) BEGIN SELECT RAISE(ABORT, 'store_fenced: the store is moving between databases'); END;
--> statement-breakpoint
CREATE TRIGGER `idempotency_keys_fence_update` BEFORE UPDATE ON `idempotency_keys` FOR EACH ROW WHEN EXISTS (SELECT 1 FROM `store_fences` AS f WHERE f.`store_id` = NEW.`store_id`) BEGIN SELECT RAISE(ABORT, 'store_fenced: the store is moving between databases'); END;
--> statement-breakpoint
CREATE TRIGGER `idempotency_keys_fence_delete` BEFORE DELETE ON `idempotency_keys` FOR EACH ROW WHEN EXISTS (SELECT 1 FROM `store_fences` AS f WHERE f.`store_id` = OLD.`store_id`) BEGIN SELECT RAISE(ABORT, 'store_fenced: the store is moving between databases'); END;
