ALTER TABLE "changes" ADD COLUMN "changed" text[];--> statement-breakpoint
ALTER TABLE "prompt_revisions" ADD COLUMN "changed" text[];--> statement-breakpoint
ALTER TABLE "prompt_revisions" ADD COLUMN "memory_files" text[];--> statement-breakpoint
ALTER TABLE "prompts" ADD COLUMN "changed" text[];--> statement-breakpoint
ALTER TABLE "prompts" ADD COLUMN "memory_files" text[];