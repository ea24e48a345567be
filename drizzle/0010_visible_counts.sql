CREATE TABLE "visible_counts" (
	"tbl" text NOT NULL,
	"flags" integer NOT NULL,
	"n" bigint NOT NULL,
	CONSTRAINT "visible_counts_tbl_flags_pk" PRIMARY KEY("tbl","flags")
);
