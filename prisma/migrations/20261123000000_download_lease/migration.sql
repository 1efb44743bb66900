-- AlterTable
ALTER TABLE "downloads" ADD COLUMN     "lease_expires_at" TIMESTAMPTZ(3);
