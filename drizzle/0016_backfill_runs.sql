CREATE TABLE "backfill_runs" (
	"id" text PRIMARY KEY NOT NULL,
	"started_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	"listed" integer NOT NULL,
	"listing_done" boolean NOT NULL,
	"done" integer NOT NULL,
	"skipped" integer NOT NULL,
	"failed" integer NOT NULL,
	"records" bigint NOT NULL,
	"finished_at" timestamp with time zone
);
