CREATE TABLE "revision_texts" (
	"did" text NOT NULL,
	"hash" text NOT NULL,
	"base" text,
	"depth" integer DEFAULT 0 NOT NULL,
	"length" integer NOT NULL,
	"body" text NOT NULL,
	CONSTRAINT "revision_texts_did_hash_pk" PRIMARY KEY("did","hash")
);
--> statement-breakpoint
ALTER TABLE "prompt_revisions" ADD COLUMN "text_kept" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "prompt_revisions" ADD COLUMN "core_memory_hash" text;--> statement-breakpoint
ALTER TABLE "prompt_revisions" ADD COLUMN "core_memory_at" integer;--> statement-breakpoint
ALTER TABLE "prompt_revisions" ADD COLUMN "core_memory_length" integer;--> statement-breakpoint
ALTER TABLE "prompts" ADD COLUMN "search_vector" "tsvector";--> statement-breakpoint
CREATE INDEX "prompts_search_idx" ON "prompts" USING gin ("search_vector") WHERE NOT deleted AND NOT hidden;