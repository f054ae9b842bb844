-- Hand-written (`drizzle-kit generate --custom`): drizzle's schema cannot describe a virtual table or a
-- trigger, so 0001_snapshot.json equals 0000_snapshot.json and `npm run db:generate` ignores this file.
--
-- A trigram index of the free-text search key of every subscription, for `GET /subscriptions?query=`.
-- `search_text` already holds the customer, product and variant names folded in full Unicode (the
-- writer folds them: SQLite's own folding misses `ß`/`SS` and the final sigma), so the index keeps
-- case (`case_sensitive 1`): a phrase of trigrams then matches exactly the substrings instr() finds.
-- External content: the text stays in `subscriptions` alone, the index holds only trigrams and rowids;
-- `INSERT INTO subscriptions_search(subscriptions_search) VALUES ('rebuild')` recreates it from there.
-- No bm25 ranking is ever asked for, so no per-row token counts are kept (`columnsize=0`).
CREATE VIRTUAL TABLE `subscriptions_search` USING fts5(
	`search_text`,
	content='subscriptions',
	columnsize=0,
	tokenize='trigram case_sensitive 1'
);
--> statement-breakpoint
-- Kept current by triggers, so no writer of `subscriptions` has to know about the index. An external
-- content index is told what it held with 'delete' and the old text, before the new text goes in.
CREATE TRIGGER `subscriptions_search_insert` AFTER INSERT ON `subscriptions` BEGIN
	INSERT INTO `subscriptions_search` (rowid, `search_text`) VALUES (new.rowid, new.`search_text`);
END;
--> statement-breakpoint
CREATE TRIGGER `subscriptions_search_delete` AFTER DELETE ON `subscriptions` BEGIN
	INSERT INTO `subscriptions_search` (`subscriptions_search`, rowid, `search_text`)
		VALUES ('delete', old.rowid, old.`search_text`);
END;
--> statement-breakpoint
-- Fires for an UPDATE or an upsert (INSERT … ON CONFLICT DO UPDATE) that sets the search key.
CREATE TRIGGER `subscriptions_search_update` AFTER UPDATE OF `search_text` ON `subscriptions` BEGIN
	INSERT INTO `subscriptions_search` (`subscriptions_search`, rowid, `search_text`)
		VALUES ('delete', old.rowid, old.`search_text`);
	INSERT INTO `subscriptions_search` (rowid, `search_text`) VALUES (new.rowid, new.`search_text`);
END;
--> statement-breakpoint
-- Subscriptions stored before this migration.
INSERT INTO `subscriptions_search` (`subscriptions_search`) VALUES ('rebuild');
