-- Downloads belong to the API key that created them (its HMAC, never the key). Rows from before
-- belong to nobody (the empty owner): with API_KEYS only admins see them, without it everyone does.
-- Idempotency keys become unique per owner, so that two keys never meet through one.

-- DropIndex
DROP INDEX "downloads_idempotency_key_key";

-- AlterTable
ALTER TABLE "downloads" ADD COLUMN     "owner" TEXT NOT NULL DEFAULT '';

-- CreateIndex
CREATE INDEX "downloads_owner_created_at_id_idx" ON "downloads"("owner", "created_at", "id");

-- CreateIndex
CREATE INDEX "downloads_owner_status_idx" ON "downloads"("owner", "status");

-- CreateIndex
CREATE UNIQUE INDEX "downloads_owner_idempotency_key_key" ON "downloads"("owner", "idempotency_key");
