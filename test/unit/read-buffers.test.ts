import { ConnectionSlabs } from '../../src/net/read-buffers.ts';

// The memory bulk connections read into: how much one read may be, as connections open and close,
// and that an ended connection's slabs are the next one's rather than new memory.

const MiB = 1024 * 1024;

/** `count` connections open at once, each having held one read (so that its slabs exist). */
function open(count: number): ConnectionSlabs[] {
  return Array.from({ length: count }, () => new ConnectionSlabs());
}

const closeAll = (connections: ConnectionSlabs[]) => connections.forEach((connection) => connection.close());

test('when one connection is open, then it reads 1 MiB at a time; when 32 are, then 64 KiB, and back to 1 MiB once they close', () => {
  const one = open(1);
  expect(one[0]!.readInto().length).toBe(MiB);
  const many = open(31);
  expect(one[0]!.readInto().length).toBe(64 * 1024);
  expect(many.at(-1)!.readInto().length).toBe(64 * 1024);
  closeAll(many);
  expect(one[0]!.readInto().length).toBe(MiB);
  closeAll(one);
});

test('when eight connections are open, then their slabs together stay within 8 MiB', () => {
  const connections = open(8);
  const slabs = new Set<ArrayBufferLike>();
  let bytes = 0;
  for (const connection of connections) {
    for (let read = 0; read < 2; read++) {
      const { copy } = connection.hold(Buffer.alloc(connection.readInto().length, read));
      if (!slabs.has(copy.buffer)) bytes += copy.buffer.byteLength;
      slabs.add(copy.buffer);
    }
  }
  expect(bytes).toBeLessThanOrEqual(8 * MiB);
  expect(bytes).toBeGreaterThanOrEqual(4 * MiB);
  closeAll(connections);
});

test('when a connection ends with its writes landed, then the next connection reads into its slab, not into new memory', () => {
  const [first] = open(1);
  const held = first!.hold(Buffer.alloc(1000, 1));
  held.written();
  first!.close();
  const [next] = open(1);
  const { copy } = next!.hold(Buffer.alloc(1000, 2));
  expect(copy.buffer).toBe(held.copy.buffer);
  expect(copy.every((byte) => byte === 2)).toBe(true);
  next!.close();
});

test('when many connections open after one that ended, then their smaller slabs are cut from its slab, not made anew', () => {
  const [first] = open(1);
  const held = first!.hold(Buffer.alloc(first!.readInto().length, 1));
  held.written();
  first!.close();
  // Eight connections read 256 KiB at a time: the ended connection's 2 MiB slab is four slabs of 512 KiB for them.
  const eight = open(8);
  const copies = eight.slice(0, 2).map((connection) => connection.hold(Buffer.alloc(connection.readInto().length, 2)).copy);
  expect(copies.map((copy) => copy.buffer)).toEqual([held.copy.buffer, held.copy.buffer]);
  expect(copies[0]!.byteOffset).not.toBe(copies[1]!.byteOffset);
  closeAll(eight);
});

test('when a connection ends while a write is on its way, then its slab is reused only once that write lands', () => {
  const [first] = open(1);
  const held = first!.hold(Buffer.alloc(1000, 1));
  first!.close();
  const [second] = open(1);
  const during = second!.hold(Buffer.alloc(1000, 2));
  expect(during.copy.buffer).not.toBe(held.copy.buffer);
  expect(held.copy.every((byte) => byte === 1)).toBe(true);
  held.written();
  second!.close();
  const [third] = open(1);
  const after = third!.hold(Buffer.alloc(1000, 3));
  expect([held.copy.buffer, during.copy.buffer]).toContain(after.copy.buffer);
  third!.close();
});

test('when both slabs of a connection wait on writes, then it may not read until one lands', () => {
  const [connection] = open(1);
  // Each read lands in the memory lent for it, and is held there.
  const read = () => connection!.hold(connection!.readInto());
  const holds = [read(), read(), read()];
  // Two reads fill the first slab, the third went to the second.
  expect(connection!.readable).toBe(false);
  let woken = false;
  connection!.whenReadable(() => (woken = true));
  holds[0]!.written();
  expect(woken).toBe(false);
  holds[1]!.written();
  expect(woken).toBe(true);
  expect(connection!.readable).toBe(true);
  holds[2]!.written();
  connection!.close();
});

test('when a read lands in the memory lent for it, then it is held there, not copied', () => {
  const [connection] = open(1);
  const into = connection!.readInto();
  into.fill(9, 0, 500);
  const held = connection!.hold(into.subarray(0, 500));
  expect(held.copy.buffer).toBe(into.buffer);
  expect(held.copy.byteOffset).toBe(into.byteOffset);
  held.written();
  connection!.close();
});

test('when bytes are held while memory is lent for the next read (those that came with the head), then they go beside it, never into it', () => {
  const [connection] = open(1);
  const into = connection!.readInto();
  const early = connection!.hold(Buffer.alloc(1000, 7));
  // The read lands over all of the memory lent for it.
  into.fill(9);
  expect(early.copy.every((byte) => byte === 7)).toBe(true);
  const held = connection!.hold(into);
  expect(held.copy.every((byte) => byte === 9)).toBe(true);
  expect(early.copy.every((byte) => byte === 7)).toBe(true);
  early.written();
  held.written();
  connection!.close();
});
