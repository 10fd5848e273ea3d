import { once } from 'node:events';
import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy on a free loopback port that can cut the flows open through it without telling
 * either end: no FIN, no RST, nothing forwarded any more (what a NAT or a firewall dropping an idle
 * flow does). Connections made afterwards are forwarded as usual.
 */
export class TcpProxy {
  private readonly flows = new Set<[Socket, Socket]>();
  private readonly silenced: [Socket, Socket][] = [];

  private constructor(private readonly server: Server) {}

  static async start(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
    const server = createServer();
    const proxy = new TcpProxy(server);
    server.on('connection', (client) => proxy.forward(client, connect(targetPort, targetHost)));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return proxy;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** Every flow open now stops carrying bytes, both ways; both ends still think it is open. */
  silenceOpenFlows(): void {
    for (const [client, upstream] of this.flows) {
      client.unpipe(upstream);
      upstream.unpipe(client);
      client.pause();
      upstream.pause();
      this.silenced.push([client, upstream]);
    }
    this.flows.clear();
  }

  async close(): Promise<void> {
    for (const [client, upstream] of [...this.flows, ...this.silenced]) {
      client.destroy();
      upstream.destroy();
    }
    this.server.close();
    this.server.unref();
  }

  private forward(client: Socket, upstream: Socket): void {
    const flow: [Socket, Socket] = [client, upstream];
    this.flows.add(flow);
    client.pipe(upstream);
    upstream.pipe(client);
    const end = () => {
      this.flows.delete(flow);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  }
}
