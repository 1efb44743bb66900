-- The clip a subscription's template asks for, as a collection's: a start and an end in seconds
-- of the media; both null for the whole video, an end of null for its end.

-- AlterTable
ALTER TABLE "subscriptions" ADD COLUMN     "clip_end_seconds" DOUBLE PRECISION,
ADD COLUMN     "clip_start_seconds" DOUBLE PRECISION;
