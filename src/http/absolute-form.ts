import type { RequestListener } from 'node:http';

// RFC 9112 (3.2.2): a server must accept a request target in absolute form (`GET http://host/path`),
// as clients write it to proxies, and take the host from it rather than from the Host header. The
// validator and the file shortcut match only the origin form, so the target is turned into that,
// and its host into Host, which the links in the answer are built on. A target for another host is
// answered as its path is, as most servers do: a name that reaches this service is one of its own.

/** `http(s)://`, user info (dropped), then a host (name, IPv4 or [IPv6], with a port) and the rest. */
const ABSOLUTE = /^https?:\/\/(?:[^/?#@]*@)?([\w.~-]+|\[[\d.:a-f]+\])(:\d+)?([/?].*)?$/i;

/** `listener`, given requests in absolute form as if they had come in origin form. */
export function acceptAbsoluteForm(listener: RequestListener): RequestListener {
  return (req, res) => {
    const target = ABSOLUTE.exec(req.url ?? '');
    if (target) {
      const [, host, port = '', rest = '/'] = target;
      req.headers.host = host! + port;
      req.url = rest.startsWith('/') ? rest : `/${rest}`;
    }
    listener(req, res);
  };
}
