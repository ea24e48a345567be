-- Every record a batch writes is updated again in the same transaction (the change log's
-- emitted_* state, see src/db/change-log.ts). On a full page that update is a new tuple on
-- another page with an entry in every index, the search GIN's hundred-odd words included;
-- with room left on the page it is a HOT update that touches no index (measured on 1,000
-- prompts: 570-610 ms for that update at the default fillfactor, 30-55 ms at 50). Pages
-- filled before this keep their density; new ones are filled to half.
ALTER TABLE prompts SET (fillfactor = 50);
--> statement-breakpoint
ALTER TABLE conversations SET (fillfactor = 50);
--> statement-breakpoint
ALTER TABLE agents SET (fillfactor = 50);
