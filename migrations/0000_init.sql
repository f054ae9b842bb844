CREATE TABLE `api_tokens` (
	`token_hash` text PRIMARY KEY NOT NULL,
	`store_ids` text NOT NULL,
	`abilities` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `cross_sells` (
	`id` text PRIMARY KEY NOT NULL,
	`owner_product_id` text NOT NULL,
	`position` integer NOT NULL,
	`product_id` text,
	`variant_id` text,
	`parent_id` text,
	`title` text,
	`main_description` text,
	`description` text,
	`button_text` text,
	`amount` integer,
	`currency` text,
	`discount` text,
	`validity_minutes` integer,
	`one_purchase` integer NOT NULL,
	`send_offer` integer NOT NULL,
	`active` integer NOT NULL,
	FOREIGN KEY (`owner_product_id`) REFERENCES `products`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `cross_sells_owner_position` ON `cross_sells` (`owner_product_id`,`position`);--> statement-breakpoint
CREATE TABLE `custom_fields` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`product_id` text NOT NULL,
	`owner_kind` text NOT NULL,
	`owner_id` text NOT NULL,
	`name` text NOT NULL,
	`enabled` integer NOT NULL,
	`position` integer NOT NULL,
	`extra` text NOT NULL,
	FOREIGN KEY (`product_id`) REFERENCES `products`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `custom_fields_owner_name` ON `custom_fields` (`owner_kind`,`owner_id`,`name`);--> statement-breakpoint
CREATE INDEX `custom_fields_owner_position` ON `custom_fields` (`owner_kind`,`owner_id`,`position`);--> statement-breakpoint
CREATE TABLE `dev_platform_accounts` (
	`store_id` text PRIMARY KEY NOT NULL,
	`connected` integer NOT NULL,
	`projects` text NOT NULL,
	`courses` text NOT NULL,
	`fault_mode` text DEFAULT 'up' NOT NULL,
	`remaining_successes` integer,
	`updated_at` integer DEFAULT (unixepoch() * 1000) NOT NULL,
	FOREIGN KEY (`store_id`) REFERENCES `stores`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `dev_platform_calls` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`store_id` text NOT NULL,
	`op` text NOT NULL,
	`project_id` text,
	`course_id` text,
	`product_id` text,
	`ok` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `dev_platform_calls_store` ON `dev_platform_calls` (`store_id`,`id`);--> statement-breakpoint
CREATE TABLE `drafts` (
	`product_id` text PRIMARY KEY NOT NULL,
	`draft_version` integer NOT NULL,
	`document` text NOT NULL,
	`fields_based_on` integer NOT NULL,
	`settings_based_on` integer NOT NULL,
	`styles_based_on` integer NOT NULL,
	`media_based_on` integer NOT NULL,
	`course_ops_done` text DEFAULT '[]' NOT NULL,
	`publish_lease_until` integer,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`product_id`) REFERENCES `products`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `product_courses` (
	`product_id` text NOT NULL,
	`course_id` text NOT NULL,
	PRIMARY KEY(`product_id`, `course_id`),
	FOREIGN KEY (`product_id`) REFERENCES `products`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `products` (
	`id` text PRIMARY KEY NOT NULL,
	`store_id` text NOT NULL,
	`status` text NOT NULL,
	`name` text NOT NULL,
	`slug` text NOT NULL,
	`attributes` text NOT NULL,
	`custom_fields_defined` integer NOT NULL,
	`waitlist_custom_fields_defined` integer NOT NULL,
	`wall_id` text,
	`footer_id` text,
	`redirect_course_id` text,
	`fields_updated_at` integer NOT NULL,
	`settings_updated_at` integer NOT NULL,
	`styles_updated_at` integer NOT NULL,
	`media_updated_at` integer NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`store_id`) REFERENCES `stores`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `products_store_slug` ON `products` (`store_id`,`slug`);--> statement-breakpoint
CREATE TABLE `stores` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`plan_active` integer NOT NULL,
	`upload_limit_bytes` integer,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `subscriptions` (
	`id` text PRIMARY KEY NOT NULL,
	`store_id` text NOT NULL,
	`customer_id` text NOT NULL,
	`customer_name` text NOT NULL,
	`customer_email` text,
	`customer_email_key` text,
	`product_id` text NOT NULL,
	`variant_id` text NOT NULL,
	`hidden_by_customer` integer NOT NULL,
	`remote_id` text,
	`provider` text NOT NULL,
	`status` text,
	`variant_name` text,
	`product_name` text,
	`recurring_amount` integer,
	`currency` text,
	`interval` text,
	`interval_count` integer,
	`quantity` integer NOT NULL,
	`current_period_end` integer,
	`cancel_at` integer,
	`canceled_at` integer,
	`created_at` integer NOT NULL,
	`search_text` text NOT NULL,
	FOREIGN KEY (`store_id`) REFERENCES `stores`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `subscriptions_store_created` ON `subscriptions` (`store_id`,`created_at`,`id`,`search_text`);--> statement-breakpoint
CREATE INDEX `subscriptions_store_status_created` ON `subscriptions` (`store_id`,`status`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `subscriptions_store_customer_created` ON `subscriptions` (`store_id`,`customer_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `subscriptions_store_product_created` ON `subscriptions` (`store_id`,`product_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `subscriptions_store_variant_created` ON `subscriptions` (`store_id`,`variant_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `subscriptions_store_canceled` ON `subscriptions` (`store_id`,`canceled_at`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `subscriptions_store_period_end` ON `subscriptions` (`store_id`,`current_period_end`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `subscriptions_store_email` ON `subscriptions` (`store_id`,`customer_email_key`,`created_at`,`id`);--> statement-breakpoint
CREATE TABLE `variants` (
	`id` text PRIMARY KEY NOT NULL,
	`product_id` text NOT NULL,
	`position` integer NOT NULL,
	`status` text NOT NULL,
	`name` text NOT NULL,
	`attributes` text NOT NULL,
	`custom_fields_defined` integer NOT NULL,
	FOREIGN KEY (`product_id`) REFERENCES `products`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `variants_product` ON `variants` (`product_id`,`position`);