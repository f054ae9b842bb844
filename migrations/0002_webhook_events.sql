CREATE TABLE `webhook_events` (
	`id` text PRIMARY KEY NOT NULL,
	`store_id` text NOT NULL,
	`product_id` text NOT NULL,
	`type` text NOT NULL,
	`url` text NOT NULL,
	`body` text,
	`status` text DEFAULT 'pending' NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`retries_used` integer DEFAULT 0 NOT NULL,
	`final_attempt` integer DEFAULT false NOT NULL,
	`next_attempt_at` integer,
	`last_attempt_at` integer,
	`last_response_status` integer,
	`attempt_log` text DEFAULT '[]' NOT NULL,
	`lease_until` integer,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `webhook_events_store_created` ON `webhook_events` (`store_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `webhook_events_due` ON `webhook_events` (`status`,`next_attempt_at`);--> statement-breakpoint
CREATE TABLE `webhook_secrets` (
	`store_id` text PRIMARY KEY NOT NULL,
	`secret` text NOT NULL,
	`previous_secret` text,
	`previous_until` integer,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`store_id`) REFERENCES `stores`(`id`) ON UPDATE no action ON DELETE no action
);
