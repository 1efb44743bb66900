import { folderName } from '../../src/cli/collection.ts';
import type { Collection } from '../../src/client/index.ts';

// The folder `vds get` saves a collection's entries into is named after the collection, as a file
// system takes it: whatever the name a source gave it.

const ID = '0b8e4d0a-3f4c-4f8e-8c59-6c1d2a9f7e21';
const named = (name: string | null) => folderName({ id: ID, name } as Collection);

test.each([
  ['My playlist', 'My playlist'],
  ['../../etc', '.._.._etc'],
  ['a/b\\c:d*e?f"g<h>i|j', 'a_b_c_d_e_f_g_h_i_j'],
  ['tab\there\u0007', 'tab_here_'],
])('when the collection is named %j, then its folder is %j', (name, folder) => {
  expect(named(name)).toBe(folder);
});

test.each([[null], ['..'], ['.'], ['   ']])('when the collection is named %j, then its folder is named from its id', (name) => {
  expect(named(name)).toBe('collection-0b8e4d0a');
});

test('when the name is longer than a file system takes, then the folder name is cut to 255 bytes', () => {
  expect(Buffer.byteLength(named('é'.repeat(300)))).toBeLessThanOrEqual(255);
});
