// Every URL the dashboard renders: under its base path, carrying the access
// token (docs/decisions/0038: the token rides in the URL, as printed at
// start, so that a bookmark works and no cookie is set on a shared origin).

export class Links {
  constructor(
    readonly basePath: string,
    private readonly token: string,
  ) {}

  /** A page or asset under the base path, with the token and `params`. */
  to(path: string, params: Readonly<Record<string, string | undefined>> = {}): string {
    const query = new URLSearchParams({ token: this.token });
    for (const [key, value] of Object.entries(params)) if (value !== undefined && value !== "") query.set(key, value);
    return `${this.basePath}${path}?${query.toString()}`;
  }

  execution(executionId: string): string {
    return this.to(`/executions/${encodeURIComponent(executionId)}`);
  }

  action(name: string): string {
    return `${this.basePath}/actions/${name}`;
  }

  get tokenValue(): string {
    return this.token;
  }
}
