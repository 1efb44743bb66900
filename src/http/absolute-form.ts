import type { RequestListener } from 'node:http';

// RFC 9112 (3.2.2): a server must accept a request target in absolute form (`GET http://host/path`),
// as clients write it to proxies, and take the host from it rather than from the Host header. The
// validator and the file shortcut match only the origin form, so the target is turned into that,
// and its host into Host, which the links in the answer are built on. A target for another host is
// answered as its path is, as most servers do: a name that reaches this service is one of its own.

/** `http(s)://`, user info (dropped), then a host (name, IPv4 or [IPv6], with a port) and the rest. */
const ABSOLUTE = /^https?:\/\/(?:[^/?#@]*@)?([\w.~-]+|\[[\d.:a-f]+\])(:\d+)?([/?].*)?$/i;

/**
 * `listener`, given requests in absolute form as if they had come in origin form. Any other target
 * that is not a path (a host it cannot read, such as an IPv6 zone) is answered 400 here: Express
 * would hand it to url.parse, whose warning prints the whole target, a file link's token with it.
 */
export function acceptAbsoluteForm(listener: RequestListener, refuse: RequestListener): RequestListener {
  return (req, res) => {
    const url = req.url ?? '';
    const target = ABSOLUTE.exec(url);
    if (target) {
      const [, host, port = '', rest = '/'] = target;
      req.headers.host = host! + port;
      req.url = rest.startsWith('/') ? rest : `/${rest}`;
    } else if (!url.startsWith('/') && url !== '*') {
      refuse(req, res);
      return;
    }
    listener(req, res);
  };
}
