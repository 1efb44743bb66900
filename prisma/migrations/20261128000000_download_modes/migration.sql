-- What a download asks the file to hold (mode, audio format, subtitles), and what the file holds
-- (its codecs and subtitle tracks). Earlier rows asked for video, as every download did then.

-- AlterTable
ALTER TABLE "downloads" ADD COLUMN     "audio_codec" TEXT,
ADD COLUMN     "audio_format" TEXT,
ADD COLUMN     "file_subtitles" JSONB,
ADD COLUMN     "mode" TEXT NOT NULL DEFAULT 'video',
ADD COLUMN     "subtitles" TEXT[] DEFAULT ARRAY[]::TEXT[],
ADD COLUMN     "video_codec" TEXT;
