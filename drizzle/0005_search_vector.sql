ALTER TABLE "prompts" ADD COLUMN "search_vector" "tsvector";--> statement-breakpoint
CREATE INDEX "prompts_search_idx" ON "prompts" USING gin ("search_vector") WHERE NOT deleted AND NOT hidden;