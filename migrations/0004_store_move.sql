CREATE TABLE `store_fences` (
	`store_id` text PRIMARY KEY NOT NULL,
	`state` text NOT NULL,
	`since` integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE `store_directory` ADD `moving` integer DEFAULT false NOT NULL;
-- Fences (docs/scaling.md, "Moving a store"): while a store's id is in store_fences, no row of that store in
-- this database may be inserted, updated or deleted, whichever code path sends the write. The failure's text
-- starts with store_fenced, which src/db/fence.ts recognises.

--> statement-breakpoint
CREATE TRIGGER `stores_fence_insert` BEFORE INSERT ON `stores` FOR EACH ROW WHEN EXISTS (SELECT 1 FROM `store_fences` AS f WHERE f.`store_id` = NEW.`id`) BEGIN SELECT RAISE(ABORT, 'store_fenced: the store is moving between databases'); END;
--> statement-breakpoint
CREATE TRIGGER `stores_fence_update` BEFORE UPDATE ON `stores` FOR EACH ROW WHEN EXISTS (SELECT 1 FROM `store_fences` AS f WHERE f.`store_id` = NEW.`id`) BEGIN SELECT RAISE(ABORT, 'store_fenced: the store is moving between databases'); END;
--> statement-breakpoint
CREATE TRIGGER `stores_fence_delete` BEFORE DELETE ON `stores` FOR EACH ROW WHEN EXISTS (SELECT 1 FROM `store_fences` AS f WHERE f.`store_id` = OLD.`id`) BEGIN SELECT RAISE(ABORT, 'store_fenced: the store is moving between databases'); END;
--> statement-breakpoint
CREATE TRIGGER `products_fence_insert` BEFORE INSERT ON `products` FOR EACH ROW WHEN EXISTS (SELECT 1 FROM `store_fences` AS f WHERE f.`store_id` = NEW.`store_id`) BEGIN SELECT RAISE(ABORT, 'store_fenced: the store is moving between databases'); END;
--> statement-breakpoint
CREATE TRIGGER `products_fence_update` BEFORE UPDATE ON `products` FOR EACH ROW WHEN EXISTS (SELECT 1 FROM `store_fences` AS f WHERE f.`store_id` = NEW.`store_id`) BEGIN SELECT RAISE(ABORT, 'store_fenced: the store is moving between databases'); END;
--> statement-breakpoint
CREATE TRIGGER `products_fence_delete` BEFORE DELETE ON `products` FOR EACH ROW WHEN EXISTS (SELECT 1 FROM `store_fences` AS f WHERE f.`store_id` = OLD.`store_id`) BEGIN SELECT RAISE(ABORT, 'store_fenced: the store is moving between databases'); END;
--> statement-breakpoint
CREATE TRIGGER `variants_fence_insert` BEFORE INSERT ON `variants` FOR EACH ROW WHEN EXISTS (SELECT 1 FROM `store_fences` AS f JOIN `products` AS p ON p.`store_id` = f.`store_id` WHERE p.`id` = NEW.`product_id`) BEGIN SELECT RAISE(ABORT, 'store_fenced: the store is moving between databases'); END;
--> statement-breakpoint
CREATE TRIGGER `variants_fence_update` BEFORE UPDATE ON `variants` FOR EACH ROW WHEN EXISTS (SELECT 1 FROM `store_fences` AS f JOIN `products` AS p ON p.`store_id` = f.`store_id` WHERE p.`id` = NEW.`product_id`) BEGIN SELECT RAISE(ABORT, 'store_fenced: the store is moving between databases'); END;
--> statement-breakpoint
CREATE TRIGGER `variants_fence_delete` BEFORE DELETE ON `variants` FOR EACH ROW WHEN EXISTS (SELECT 1 FROM `store_fences` AS f JOIN `products` AS p ON p.`store_id` = f.`store_id` WHERE p.`id` = OLD.`product_id`) BEGIN SELECT RAISE(ABORT, 'store_fenced: the store is moving between databases'); END;
--> statement-breakpoint
CREATE TRIGGER `custom_fields_fence_insert` BEFORE INSERT ON `custom_fields` FOR EACH ROW WHEN EXISTS (SELECT 1 FROM `store_fences` AS f JOIN `products` AS p ON p.`store_id` = f.`store_id` WHERE p.`id` = NEW.`product_id`) BEGIN SELECT RAISE(ABORT, 'store_fenced: the store is moving between databases'); END;
--> statement-breakpoint
CREATE TRIGGER `custom_fields_fence_update` BEFORE UPDATE ON `custom_fields` FOR EACH ROW WHEN EXISTS (SELECT 1 FROM `store_fences` AS f JOIN `products` AS p ON p.`store_id` = f.`store_id` WHERE p.`id` = NEW.`product_id`) BEGIN SELECT RAISE(ABORT, 'store_fenced: the store is moving between databases'); END;
--> statement-breakpoint
CREATE TRIGGER `custom_fields_fence_delete` BEFORE DELETE ON `custom_fields` FOR EACH ROW WHEN EXISTS (SELECT 1 FROM `store_fences` AS f JOIN `products` AS p ON p.`store_id` = f.`store_id` WHERE p.`id` = OLD.`product_id`) BEGIN SELECT RAISE(ABORT, 'store_fenced: the store is moving between databases'); END;
--> statement-breakpoint
CREATE TRIGGER `cross_sells_fence_insert` BEFORE INSERT ON `cross_sells` FOR EACH ROW WHEN EXISTS (SELECT 1 FROM `store_fences` AS f JOIN `products` AS p ON p.`store_id` = f.`store_id` WHERE p.`id` = NEW.`owner_product_id`) BEGIN SELECT RAISE(ABORT, 'store_fenced: the store is moving between databases'); END;
--> statement-breakpoint
CREATE TRIGGER `cross_sells_fence_update` BEFORE UPDATE ON `cross_sells` FOR EACH ROW WHEN EXISTS (SELECT 1 FROM `store_fences` AS f JOIN `products` AS p ON p.`store_id` = f.`store_id` WHERE p.`id` = NEW.`owner_product_id`) BEGIN SELECT RAISE(ABORT, 'store_fenced: the store is moving between databases'); END;
--> statement-breakpoint
CREATE TRIGGER `cross_sells_fence_delete` BEFORE DELETE ON `cross_sells` FOR EACH ROW WHEN EXISTS (SELECT 1 FROM `store_fences` AS f JOIN `products` AS p ON p.`store_id` = f.`store_id` WHERE p.`id` = OLD.`owner_product_id`) BEGIN SELECT RAISE(ABORT, 'store_fenced: the store is moving between databases'); END;
--> statement-breakpoint
CREATE TRIGGER `product_courses_fence_insert` BEFORE INSERT ON `product_courses` FOR EACH ROW WHEN EXISTS (SELECT 1 FROM `store_fences` AS f JOIN `products` AS p ON p.`store_id` = f.`store_id` WHERE p.`id` = NEW.`product_id`) BEGIN SELECT RAISE(ABORT, 'store_fenced: the store is moving between databases'); END;
--> statement-breakpoint
CREATE TRIGGER `product_courses_fence_update` BEFORE UPDATE ON `product_courses` FOR EACH ROW WHEN EXISTS (SELECT 1 FROM `store_fences` AS f JOIN `products` AS p ON p.`store_id` = f.`store_id` WHERE p.`id` = NEW.`product_id`) BEGIN SELECT RAISE(ABORT, 'store_fenced: the store is moving between databases'); END;
--> statement-breakpoint
CREATE TRIGGER `product_courses_fence_delete` BEFORE DELETE ON `product_courses` FOR EACH ROW WHEN EXISTS (SELECT 1 FROM `store_fences` AS f JOIN `products` AS p ON p.`store_id` = f.`store_id` WHERE p.`id` = OLD.`product_id`) BEGIN SELECT RAISE(ABORT, 'store_fenced: the store is moving between databases'); END;
--> statement-breakpoint
CREATE TRIGGER `drafts_fence_insert` BEFORE INSERT ON `drafts` FOR EACH ROW WHEN EXISTS (SELECT 1 FROM `store_fences` AS f JOIN `products` AS p ON p.`store_id` = f.`store_id` WHERE p.`id` = NEW.`product_id`) BEGIN SELECT RAISE(ABORT, 'store_fenced: the store is moving between databases'); END;
--> statement-breakpoint
CREATE TRIGGER `drafts_fence_update` BEFORE UPDATE ON `drafts` FOR EACH ROW WHEN EXISTS (SELECT 1 FROM `store_fences` AS f JOIN `products` AS p ON p.`store_id` = f.`store_id` WHERE p.`id` = NEW.`product_id`) BEGIN SELECT RAISE(ABORT, 'store_fenced: the store is moving between databases'); END;
--> statement-breakpoint
CREATE TRIGGER `drafts_fence_delete` BEFORE DELETE ON `drafts` FOR EACH ROW WHEN EXISTS (SELECT 1 FROM `store_fences` AS f JOIN `products` AS p ON p.`store_id` = f.`store_id` WHERE p.`id` = OLD.`product_id`) BEGIN SELECT RAISE(ABORT, 'store_fenced: the store is moving between databases'); END;
--> statement-breakpoint
CREATE TRIGGER `subscriptions_fence_insert` BEFORE INSERT ON `subscriptions` FOR EACH ROW WHEN EXISTS (SELECT 1 FROM `store_fences` AS f WHERE f.`store_id` = NEW.`store_id`) BEGIN SELECT RAISE(ABORT, 'store_fenced: the store is moving between databases'); END;
--> statement-breakpoint
CREATE TRIGGER `subscriptions_fence_update` BEFORE UPDATE ON `subscriptions` FOR EACH ROW WHEN EXISTS (SELECT 1 FROM `store_fences` AS f WHERE f.`store_id` = NEW.`store_id`) BEGIN SELECT RAISE(ABORT, 'store_fenced: the store is moving between databases'); END;
--> statement-breakpoint
CREATE TRIGGER `subscriptions_fence_delete` BEFORE DELETE ON `subscriptions` FOR EACH ROW WHEN EXISTS (SELECT 1 FROM `store_fences` AS f WHERE f.`store_id` = OLD.`store_id`) BEGIN SELECT RAISE(ABORT, 'store_fenced: the store is moving between databases'); END;
--> statement-breakpoint
CREATE TRIGGER `webhook_secrets_fence_insert` BEFORE INSERT ON `webhook_secrets` FOR EACH ROW WHEN EXISTS (SELECT 1 FROM `store_fences` AS f WHERE f.`store_id` = NEW.`store_id`) BEGIN SELECT RAISE(ABORT, 'store_fenced: the store is moving between databases'); END;
--> statement-breakpoint
CREATE TRIGGER `webhook_secrets_fence_update` BEFORE UPDATE ON `webhook_secrets` FOR EACH ROW WHEN EXISTS (SELECT 1 FROM `store_fences` AS f WHERE f.`store_id` = NEW.`store_id`) BEGIN SELECT RAISE(ABORT, 'store_fenced: the store is moving between databases'); END;
--> statement-breakpoint
CREATE TRIGGER `webhook_secrets_fence_delete` BEFORE DELETE ON `webhook_secrets` FOR EACH ROW WHEN EXISTS (SELECT 1 FROM `store_fences` AS f WHERE f.`store_id` = OLD.`store_id`) BEGIN SELECT RAISE(ABORT, 'store_fenced: the store is moving between databases'); END;
--> statement-breakpoint
CREATE TRIGGER `webhook_events_fence_insert` BEFORE INSERT ON `webhook_events` FOR EACH ROW WHEN EXISTS (SELECT 1 FROM `store_fences` AS f WHERE f.`store_id` = NEW.`store_id`) BEGIN SELECT RAISE(ABORT, 'store_fenced: the store is moving between databases'); END;
--> statement-breakpoint
CREATE TRIGGER `webhook_events_fence_update` BEFORE UPDATE ON `webhook_events` FOR EACH ROW WHEN EXISTS (SELECT 1 FROM `store_fences` AS f WHERE f.`store_id` = NEW.`store_id`) BEGIN SELECT RAISE(ABORT, 'store_fenced: the store is moving between databases'); END;
--> statement-breakpoint
CREATE TRIGGER `webhook_events_fence_delete` BEFORE DELETE ON `webhook_events` FOR EACH ROW WHEN EXISTS (SELECT 1 FROM `store_fences` AS f WHERE f.`store_id` = OLD.`store_id`) BEGIN SELECT RAISE(ABORT, 'store_fenced: the store is moving between databases'); END;
