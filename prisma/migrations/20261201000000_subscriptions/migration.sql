-- CreateTable
CREATE TABLE "subscriptions" (
    "id" UUID NOT NULL,
    "owner" TEXT NOT NULL DEFAULT '',
    "url" TEXT NOT NULL,
    "url_key" TEXT NOT NULL,
    "name" TEXT,
    "title" TEXT,
    "extractor" TEXT,
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "interval_seconds" INTEGER NOT NULL,
    "title_contains" TEXT,
    "backfill" INTEGER NOT NULL DEFAULT 0,
    "quality" TEXT NOT NULL,
    "mode" TEXT NOT NULL DEFAULT 'video',
    "audio_format" TEXT,
    "subtitles" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "callback_url" TEXT,
    "link_base" TEXT,
    "primed_at" TIMESTAMPTZ(3),
    "last_checked_at" TIMESTAMPTZ(3),
    "next_check_at" TIMESTAMPTZ(3),
    "checking_until" TIMESTAMPTZ(3),
    "failures" INTEGER NOT NULL DEFAULT 0,
    "error_code" TEXT,
    "error_message" TEXT,
    "error_retryable" BOOLEAN,
    "last_collection_id" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "subscriptions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "subscription_entries" (
    "subscription_id" UUID NOT NULL,
    "key" TEXT NOT NULL,
    "archived" BOOLEAN NOT NULL,
    "seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "subscription_entries_pkey" PRIMARY KEY ("subscription_id","key")
);

-- CreateIndex
CREATE INDEX "subscriptions_created_at_id_idx" ON "subscriptions"("created_at", "id");

-- CreateIndex
CREATE INDEX "subscriptions_owner_created_at_id_idx" ON "subscriptions"("owner", "created_at", "id");

-- CreateIndex
CREATE UNIQUE INDEX "subscriptions_owner_url_key_key" ON "subscriptions"("owner", "url_key");

-- CreateIndex
CREATE INDEX "subscription_entries_subscription_id_seen_at_idx" ON "subscription_entries"("subscription_id", "seen_at");

-- AddForeignKey
ALTER TABLE "subscription_entries" ADD CONSTRAINT "subscription_entries_subscription_id_fkey" FOREIGN KEY ("subscription_id") REFERENCES "subscriptions"("id") ON DELETE CASCADE ON UPDATE CASCADE;
