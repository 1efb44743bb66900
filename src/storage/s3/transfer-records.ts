import type { Prisma } from '../../db/prisma.ts';

// Every read and write of the transfers an S3 store keeps in PostgreSQL, in one place.

export type TransferRecord = {
  uploadId: string;
  key: string;
  url: string;
  total: number | null;
  partBytes: number;
  completed: boolean;
  /** The completed parts, by number. */
  parts: PartRecord[];
};

export type PartRecord = { number: number; etag: string; firstByte: number; bytes: number };

export class TransferRecords {
  constructor(private readonly prisma: Prisma) {}

  async find(id: string): Promise<TransferRecord | null> {
    const row = await this.prisma.transfer.findUnique({ where: { downloadId: id }, include: { parts: { orderBy: { number: 'asc' } } } });
    if (!row) return null;
    return {
      uploadId: row.uploadId,
      key: row.key,
      url: row.url,
      total: row.totalBytes === null ? null : Number(row.totalBytes),
      partBytes: Number(row.partBytes),
      completed: row.completed,
      parts: row.parts.map((part) => ({ number: part.number, etag: part.etag, firstByte: Number(part.firstByte), bytes: Number(part.bytes) })),
    };
  }

  /** Records a new upload for `id`, in place of any earlier one (whose parts go with it). */
  async begin(id: string, record: Omit<TransferRecord, 'parts' | 'completed'>): Promise<void> {
    const data = { uploadId: record.uploadId, key: record.key, url: record.url, totalBytes: record.total, partBytes: record.partBytes, completed: false };
    await this.prisma.$transaction([
      this.prisma.transfer.deleteMany({ where: { downloadId: id } }),
      this.prisma.transfer.create({ data: { downloadId: id, ...data } }),
    ]);
  }

  /** Records a completed part of the upload `uploadId`; false when a later upload has replaced it. */
  async addPart(id: string, uploadId: string, part: PartRecord): Promise<boolean> {
    const added = await this.prisma.$executeRaw`
      INSERT INTO transfer_parts (download_id, number, etag, first_byte, bytes)
      SELECT download_id, ${part.number}, ${part.etag}, ${part.firstByte}, ${part.bytes}
      FROM transfers WHERE download_id = ${id}::uuid AND upload_id = ${uploadId}
      ON CONFLICT (download_id, number) DO UPDATE SET etag = EXCLUDED.etag, first_byte = EXCLUDED.first_byte, bytes = EXCLUDED.bytes`;
    return added > 0;
  }

  async markCompleted(id: string, uploadId: string): Promise<void> {
    await this.prisma.transfer.updateMany({ where: { downloadId: id, uploadId }, data: { completed: true } });
  }

  async remove(id: string): Promise<void> {
    await this.prisma.transfer.deleteMany({ where: { downloadId: id } });
  }

  async ids(): Promise<string[]> {
    const rows = await this.prisma.transfer.findMany({ select: { downloadId: true } });
    return rows.map((row) => row.downloadId);
  }
}
