-- With STORAGE=s3: direct files streamed into multipart uploads, and their completed parts, so that
-- another worker resumes a transfer from its last completed part.

-- CreateTable
CREATE TABLE "transfers" (
    "download_id" UUID NOT NULL,
    "upload_id" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "url" TEXT NOT NULL,
    "total_bytes" BIGINT,
    "part_bytes" BIGINT NOT NULL,
    "completed" BOOLEAN NOT NULL DEFAULT false,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "transfers_pkey" PRIMARY KEY ("download_id")
);

-- CreateTable
CREATE TABLE "transfer_parts" (
    "download_id" UUID NOT NULL,
    "number" INTEGER NOT NULL,
    "etag" TEXT NOT NULL,
    "first_byte" BIGINT NOT NULL,
    "bytes" BIGINT NOT NULL,

    CONSTRAINT "transfer_parts_pkey" PRIMARY KEY ("download_id","number")
);

-- AddForeignKey
ALTER TABLE "transfer_parts" ADD CONSTRAINT "transfer_parts_download_id_fkey" FOREIGN KEY ("download_id") REFERENCES "transfers"("download_id") ON DELETE CASCADE ON UPDATE CASCADE;
