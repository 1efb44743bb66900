-- The clip a download asks for, and the one a collection's children are made with: a start and
-- an end in seconds of the media; both null for the whole video, an end of null for its end.

-- AlterTable
ALTER TABLE "collections" ADD COLUMN     "clip_end_seconds" DOUBLE PRECISION,
ADD COLUMN     "clip_start_seconds" DOUBLE PRECISION;

-- AlterTable
ALTER TABLE "downloads" ADD COLUMN     "clip_end_seconds" DOUBLE PRECISION,
ADD COLUMN     "clip_start_seconds" DOUBLE PRECISION;
