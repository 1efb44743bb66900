-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- CreateEnum
CREATE TYPE "download_status" AS ENUM ('queued', 'downloading', 'processing', 'completed', 'failed', 'expired');

-- CreateTable
CREATE TABLE "downloads" (
    "id" UUID NOT NULL,
    "status" "download_status" NOT NULL DEFAULT 'queued',
    "url" TEXT NOT NULL,
    "quality" TEXT NOT NULL,
    "requested_filename" TEXT,
    "callback_url" TEXT,
    "idempotency_key" TEXT,
    "request_hash" TEXT NOT NULL,
    "downloaded_bytes" BIGINT NOT NULL DEFAULT 0,
    "total_bytes" BIGINT,
    "speed_bytes_per_second" DOUBLE PRECISION,
    "file_name" TEXT,
    "content_type" TEXT,
    "size_bytes" BIGINT,
    "sha256" TEXT,
    "duration_seconds" DOUBLE PRECISION,
    "width" INTEGER,
    "height" INTEGER,
    "token_secret" TEXT,
    "source_validator" TEXT,
    "expires_at" TIMESTAMPTZ(3),
    "error_code" TEXT,
    "error_message" TEXT,
    "error_retryable" BOOLEAN,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,
    "started_at" TIMESTAMPTZ(3),
    "completed_at" TIMESTAMPTZ(3),

    CONSTRAINT "downloads_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "downloads_idempotency_key_key" ON "downloads"("idempotency_key");

-- CreateIndex
CREATE INDEX "downloads_status_expires_at_idx" ON "downloads"("status", "expires_at");
