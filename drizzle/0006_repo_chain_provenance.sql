CREATE TABLE "repo_chain" (
	"did" text PRIMARY KEY NOT NULL,
	"rev" text,
	"data" text,
	"commit_cid" text,
	"sync_state" text NOT NULL,
	"sync_reason" text,
	"sync_since" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "agents" ADD COLUMN "source" text;--> statement-breakpoint
ALTER TABLE "agents" ADD COLUMN "verified" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "agents" ADD COLUMN "commit_cid" text;--> statement-breakpoint
ALTER TABLE "conversations" ADD COLUMN "source" text;--> statement-breakpoint
ALTER TABLE "conversations" ADD COLUMN "verified" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "conversations" ADD COLUMN "commit_cid" text;--> statement-breakpoint
ALTER TABLE "prompts" ADD COLUMN "source" text;--> statement-breakpoint
ALTER TABLE "prompts" ADD COLUMN "verified" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "prompts" ADD COLUMN "commit_cid" text;--> statement-breakpoint
CREATE INDEX "repo_chain_state_idx" ON "repo_chain" USING btree ("sync_state","sync_since");