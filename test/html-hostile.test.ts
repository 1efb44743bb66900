import { filled } from './support/html-pages.ts';
import { useService } from './support/harness.ts';
import { downloadToEnd, downloadWhileProbing, expectNothingStored } from './support/outcomes.ts';

// A page written to make the media finder take quadratic time, downloaded through the API: the API
// keeps answering while the page is read. The finder on such pages alone is timed in
// test/unit/html-hostile.test.ts.

describe('a hostile page through the API', () => {
  const { app, source } = useService({ maxAttempts: 1 });

  beforeAll(async () => {
    // The first requests compile the contract's validators, in the service and in the test client
    // (some 400 ms on this event loop); an honest page first, so that the watch sees the hostile one.
    await downloadToEnd(app, { url: source.content('/honest.html', '<title>No video here</title>', { contentType: 'text/html' }) });
  });

  test('when a client downloads an 8 MiB page of slashes, then it fails as unsupported_source while the API keeps answering, and nothing is stored', async () => {
    const url = source.content('/hostile/slashes.html', filled('/'), { contentType: 'text/html' });
    const done = await downloadWhileProbing(app, { url });
    expect(done).toMatchObject({ status: 'failed', error: { code: 'unsupported_source', retryable: false } });
    expect(source.requestsFor('/hostile/slashes.html')).toHaveLength(1);
    await expectNothingStored(app, done.id);
  });
});
