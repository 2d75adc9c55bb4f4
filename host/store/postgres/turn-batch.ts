// Questions asked within one event-loop turn, sent to PostgreSQL together
// (the journal reads of new conversations, `journal-reads.ts`; the inbox
// probes, `inbox-probes.ts`): a batch leaves on the next event-loop round
// after its first question arrived, at most `chunkMax` questions per
// statement, and a failed statement fails every question it carried (each
// asker retries as it would a single read).

interface Asked<Question, Answer> {
  readonly question: Question;
  readonly resolve: (answer: Answer) => void;
  readonly reject: (error: unknown) => void;
}

export class TurnBatch<Question, Answer> {
  private waiting: Asked<Question, Answer>[] = [];
  private scheduled = false;
  /** Figures for benchmarks: statements sent and questions in them. */
  readonly figures = { statements: 0, questions: 0 };

  constructor(
    private readonly chunkMax: number,
    /** One statement for the questions given: an answer for each, in order. */
    private readonly answer: (questions: readonly Question[]) => Promise<readonly Answer[]>,
  ) {}

  ask(question: Question): Promise<Answer> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ question, resolve, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        const batch = this.waiting;
        this.waiting = [];
        for (let from = 0; from < batch.length; from += this.chunkMax) void this.send(batch.slice(from, from + this.chunkMax));
      });
    });
  }

  private async send(batch: readonly Asked<Question, Answer>[]): Promise<void> {
    this.figures.statements += 1;
    this.figures.questions += batch.length;
    try {
      const answers = await this.answer(batch.map((asked) => asked.question));
      batch.forEach((asked, index) => asked.resolve(answers[index]!));
    } catch (error) {
      for (const asked of batch) asked.reject(error);
    }
  }
}
