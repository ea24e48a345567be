CREATE TABLE "accounts" (
	"did" text PRIMARY KEY NOT NULL,
	"active" boolean DEFAULT true NOT NULL,
	"status" text,
	"handle" text,
	"operator_hidden" boolean DEFAULT false NOT NULL,
	"account_seq" bigint,
	"account_us" bigint,
	"identity_seq" bigint,
	"identity_us" bigint,
	"last_rev" text,
	"purged_rev" text,
	"purged_us" bigint,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "agents" (
	"did" text NOT NULL,
	"rkey" text NOT NULL,
	"rev" text NOT NULL,
	"cid" text,
	"record" jsonb,
	"deleted" boolean DEFAULT false NOT NULL,
	"hidden" boolean DEFAULT false NOT NULL,
	"indexed_at" timestamp with time zone NOT NULL,
	"emitted_cid" text,
	"emitted_visible" boolean DEFAULT false NOT NULL,
	"template_hash" text,
	CONSTRAINT "agents_did_rkey_pk" PRIMARY KEY("did","rkey")
);
--> statement-breakpoint
CREATE TABLE "backfill_repos" (
	"did" text PRIMARY KEY NOT NULL,
	"rev" text,
	"records" integer DEFAULT 0 NOT NULL,
	"finished_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "changes" (
	"did" text NOT NULL,
	"seq" bigserial NOT NULL,
	"collection" text NOT NULL,
	"rkey" text NOT NULL,
	"op" text NOT NULL,
	"cid" text,
	"flags" integer,
	"at" timestamp with time zone NOT NULL,
	CONSTRAINT "changes_did_seq_pk" PRIMARY KEY("did","seq")
);
--> statement-breakpoint
CREATE TABLE "conversations" (
	"did" text NOT NULL,
	"rkey" text NOT NULL,
	"rev" text NOT NULL,
	"cid" text,
	"record" jsonb,
	"deleted" boolean DEFAULT false NOT NULL,
	"hidden" boolean DEFAULT false NOT NULL,
	"indexed_at" timestamp with time zone NOT NULL,
	"emitted_cid" text,
	"emitted_visible" boolean DEFAULT false NOT NULL,
	CONSTRAINT "conversations_did_rkey_pk" PRIMARY KEY("did","rkey")
);
--> statement-breakpoint
CREATE TABLE "ingest_cursors" (
	"source" text NOT NULL,
	"key" text NOT NULL,
	"cursor" bigint NOT NULL,
	"last_event_us" bigint,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "ingest_cursors_source_key_pk" PRIMARY KEY("source","key")
);
--> statement-breakpoint
CREATE TABLE "prompt_revisions" (
	"did" text NOT NULL,
	"rkey" text NOT NULL,
	"rev" text NOT NULL,
	"cid" text NOT NULL,
	"compiled_at" text,
	"raw_system_hash" text,
	"memfs_revision" text,
	"content_hash" text,
	"seen_at" timestamp with time zone NOT NULL,
	CONSTRAINT "prompt_revisions_did_rkey_rev_pk" PRIMARY KEY("did","rkey","rev")
);
--> statement-breakpoint
CREATE TABLE "prompts" (
	"did" text NOT NULL,
	"rkey" text NOT NULL,
	"rev" text NOT NULL,
	"cid" text,
	"record" jsonb,
	"deleted" boolean DEFAULT false NOT NULL,
	"hidden" boolean DEFAULT false NOT NULL,
	"indexed_at" timestamp with time zone NOT NULL,
	"emitted_cid" text,
	"emitted_visible" boolean DEFAULT false NOT NULL,
	"flags" integer DEFAULT 0 NOT NULL,
	"base_flags" integer DEFAULT 0 NOT NULL,
	"emitted_flags" integer,
	"validation_error" text,
	"content_bytes" integer,
	"agent_uri" text,
	"agent_did" text,
	"agent_rkey" text,
	"raw_system_hash" text,
	"memfs_revision" text,
	"compiled_us" bigint,
	"evidence" boolean DEFAULT false NOT NULL,
	"recompiles" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "prompts_did_rkey_pk" PRIMARY KEY("did","rkey")
);
--> statement-breakpoint
CREATE INDEX "accounts_handle_idx" ON "accounts" USING btree ("handle");--> statement-breakpoint
CREATE INDEX "changes_seq_idx" ON "changes" USING btree ("seq");--> statement-breakpoint
CREATE INDEX "prompts_page_idx" ON "prompts" USING btree ("rkey" DESC NULLS LAST,"did") WHERE NOT deleted AND NOT hidden;--> statement-breakpoint
CREATE INDEX "prompts_ok_idx" ON "prompts" USING btree ("rkey" DESC NULLS LAST,"did") WHERE NOT deleted AND NOT hidden AND flags = 0;--> statement-breakpoint
CREATE INDEX "prompts_orphaned_idx" ON "prompts" USING btree ("rkey" DESC NULLS LAST,"did") WHERE NOT deleted AND NOT hidden AND (flags & 1) <> 0;--> statement-breakpoint
CREATE INDEX "prompts_mismatched_idx" ON "prompts" USING btree ("rkey" DESC NULLS LAST,"did") WHERE NOT deleted AND NOT hidden AND (flags & 2) <> 0;--> statement-breakpoint
CREATE INDEX "prompts_stale_template_idx" ON "prompts" USING btree ("rkey" DESC NULLS LAST,"did") WHERE NOT deleted AND NOT hidden AND (flags & 4) <> 0;--> statement-breakpoint
CREATE INDEX "prompts_stale_memory_idx" ON "prompts" USING btree ("rkey" DESC NULLS LAST,"did") WHERE NOT deleted AND NOT hidden AND (flags & 8) <> 0;--> statement-breakpoint
CREATE INDEX "prompts_detached_idx" ON "prompts" USING btree ("rkey" DESC NULLS LAST,"did") WHERE NOT deleted AND NOT hidden AND (flags & 16) <> 0;--> statement-breakpoint
CREATE INDEX "prompts_invalid_idx" ON "prompts" USING btree ("rkey" DESC NULLS LAST,"did") WHERE NOT deleted AND NOT hidden AND (flags & 32) <> 0;--> statement-breakpoint
CREATE INDEX "prompts_agent_group_idx" ON "prompts" USING btree ("did","agent_uri","compiled_us");--> statement-breakpoint
CREATE INDEX "prompts_agent_record_idx" ON "prompts" USING btree ("agent_did","agent_rkey");