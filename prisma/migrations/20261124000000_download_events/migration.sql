-- CreateEnum
CREATE TYPE "callback_state" AS ENUM ('pending', 'delivered', 'failed');

-- AlterEnum
ALTER TYPE "download_status" ADD VALUE 'cancelled';

-- AlterTable
ALTER TABLE "downloads" ADD COLUMN     "callback_attempts" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "callback_last_error" TEXT,
ADD COLUMN     "callback_state" "callback_state",
ADD COLUMN     "link_base" TEXT;

-- CreateIndex
CREATE INDEX "downloads_created_at_id_idx" ON "downloads"("created_at", "id");

-- Every change of a download is announced to the processes that listen (event streams, the worker
-- running it), whichever process made it. The payload names the download and its status; a
-- listener reads the row itself. NOTIFY is delivered at commit, and never for a rolled-back change.
CREATE FUNCTION "notify_download_change"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('download_changes', json_build_object('id', NEW.id, 'status', NEW.status)::text);
  RETURN NULL;
END
$$;

CREATE TRIGGER "downloads_notify_change" AFTER INSERT OR UPDATE ON "downloads"
  FOR EACH ROW EXECUTE FUNCTION "notify_download_change"();
