-- How the media of a download was found: its kind, the extractor that read a site's page, its title.

-- AlterTable
ALTER TABLE "downloads" ADD COLUMN     "source_extractor" TEXT,
ADD COLUMN     "source_kind" TEXT,
ADD COLUMN     "source_title" TEXT;
