-- CreateEnum
CREATE TYPE "collection_status" AS ENUM ('expanding', 'running', 'completed', 'failed', 'cancelled');

-- AlterTable
ALTER TABLE "downloads" ADD COLUMN     "collection_id" UUID,
ADD COLUMN     "collection_index" INTEGER;

-- CreateTable
CREATE TABLE "collections" (
    "id" UUID NOT NULL,
    "owner" TEXT NOT NULL DEFAULT '',
    "kind" TEXT NOT NULL,
    "status" "collection_status" NOT NULL DEFAULT 'expanding',
    "name" TEXT,
    "title" TEXT,
    "url" TEXT,
    "extractor" TEXT,
    "subscription_id" UUID,
    "truncated" BOOLEAN NOT NULL DEFAULT false,
    "quality" TEXT NOT NULL,
    "mode" TEXT NOT NULL DEFAULT 'video',
    "audio_format" TEXT,
    "subtitles" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "callback_url" TEXT,
    "entry_limit" INTEGER NOT NULL,
    "entry_picks" INTEGER[] DEFAULT ARRAY[]::INTEGER[],
    "link_base" TEXT,
    "idempotency_key" TEXT,
    "request_hash" TEXT NOT NULL,
    "released_through" INTEGER NOT NULL DEFAULT 0,
    "error_code" TEXT,
    "error_message" TEXT,
    "error_retryable" BOOLEAN,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,
    "expanded_at" TIMESTAMPTZ(3),
    "finished_at" TIMESTAMPTZ(3),

    CONSTRAINT "collections_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "collections_created_at_id_idx" ON "collections"("created_at", "id");

-- CreateIndex
CREATE INDEX "collections_owner_created_at_id_idx" ON "collections"("owner", "created_at", "id");

-- CreateIndex
CREATE INDEX "collections_owner_status_idx" ON "collections"("owner", "status");

-- CreateIndex
CREATE UNIQUE INDEX "collections_owner_idempotency_key_key" ON "collections"("owner", "idempotency_key");

-- CreateIndex
CREATE UNIQUE INDEX "downloads_collection_id_collection_index_key" ON "downloads"("collection_id", "collection_index");

-- AddForeignKey
ALTER TABLE "downloads" ADD CONSTRAINT "downloads_collection_id_fkey" FOREIGN KEY ("collection_id") REFERENCES "collections"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- Changes are announced on the one channel event streams and workers listen to: a download's
-- announcement names its collection, so that whoever follows the collection hears its children
-- change; a collection's own changes are announced under its id.
CREATE OR REPLACE FUNCTION "notify_download_change"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('download_changes', json_build_object('id', NEW.id, 'status', NEW.status, 'collection_id', NEW.collection_id)::text);
  RETURN NULL;
END;
$$;

CREATE FUNCTION "notify_collection_change"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('download_changes', json_build_object('id', NEW.id, 'status', NEW.status)::text);
  RETURN NULL;
END;
$$;

CREATE TRIGGER "collections_notify_change" AFTER INSERT OR UPDATE ON "collections"
  FOR EACH ROW EXECUTE FUNCTION "notify_collection_change"();
