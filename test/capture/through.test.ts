/**
 * The rows of a captured `through` model of a many-to-many association: `addX`, `setXs`,
 * `removeX` and writes of the through model itself are captured (`inserted`, `deleted`,
 * `updated` for a link whose attributes change), and so are the links the database's
 * cascade deletes with a side — both dialects, in and out of a transaction.
 */
import { DataTypes, type ModelStatic, type Model as SequelizeModel } from 'sequelize';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { capture, defineOutbox, installCapture, type Outbox } from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import type { TestDatabase } from '../../testing/databases.js';
import { openOutbox, T0, testClock } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';

type AnyModel = ModelStatic<SequelizeModel>;
/** The association methods a test calls on a student. */
type Student = SequelizeModel & {
  addCourse(c: unknown, o?: object): Promise<unknown>;
  addCourses(c: unknown[], o?: object): Promise<unknown>;
  setCourses(c: unknown[], o?: object): Promise<unknown>;
  removeCourse(c: unknown, o?: object): Promise<unknown>;
};

let mark = 0;
async function markLog(outbox: Outbox) {
  mark = (await runtimeOf(outbox).store.readEvents({})).length;
}
async function logOf(outbox: Outbox) {
  const rows = (await runtimeOf(outbox).store.readEvents({})).slice(mark);
  return rows.map((e) => ({
    topic: e.name,
    key: e.orderingKey,
    payload: (typeof e.payload === 'string' ? JSON.parse(e.payload) : e.payload) as Record<
      string,
      unknown
    >,
  }));
}
/** [topic, courseId] of each event, sorted: one write's events have no fixed order. */
const brief = (log: Awaited<ReturnType<typeof logOf>>) =>
  log
    .map((e) => [e.topic, (e.payload.pk as { courseId: number }).courseId] as const)
    .sort((a, b) => a[0].localeCompare(b[0]) || a[1] - b[1]);

describeEachDialect('change capture of a through model', (dialect) => {
  let db: TestDatabase;
  let outbox: Outbox;
  let Students: AnyModel;
  let Courses: AnyModel;
  let Enrollment: AnyModel;
  let Clubs: AnyModel;
  let Membership: AnyModel;
  let student: Student;
  let courses: SequelizeModel[];
  const cid = (i: number) => courses[i]!.get('id') as number;

  beforeAll(async () => {
    db = await dialect.open();
    const schema = db.outboxOptions.schema ? { schema: db.outboxOptions.schema } : {};
    const plain = { timestamps: false, ...schema };
    Students = db.sequelize.define('Student', { name: DataTypes.STRING }, plain);
    Courses = db.sequelize.define('Course', { title: DataTypes.STRING }, plain);
    Enrollment = db.sequelize.define(
      'Enrollment',
      { grade: DataTypes.STRING },
      { tableName: 'enrollments', ...plain },
    );
    Students.belongsToMany(Courses, {
      through: Enrollment,
      foreignKey: 'studentId',
      otherKey: 'courseId',
    });
    Courses.belongsToMany(Students, {
      through: Enrollment,
      foreignKey: 'courseId',
      otherKey: 'studentId',
    });
    // A through table named by a string: Sequelize makes its model, which can be captured.
    Clubs = db.sequelize.define('Club', { name: DataTypes.STRING }, plain);
    Students.belongsToMany(Clubs, { through: 'memberships', foreignKey: 'studentId' });
    Membership = (
      Students.associations as unknown as Record<string, { through: { model: AnyModel } }>
    ).Clubs!.through.model;
    await Students.sync();
    await Courses.sync();
    await Enrollment.sync();
    await Clubs.sync();
    await Membership.sync();
    // Declared after the associations: the through model's key is the pair they add.
    const config = defineOutbox({
      events: {},
      capture: [
        capture(Enrollment, { app: 'school', payload: 'beforeAndAfter' }),
        capture(Membership, { app: 'school', payload: 'keys' }),
      ],
    });
    outbox = await openOutbox(db, config, { clock: testClock().now });
    installCapture(outbox, db.sequelize);
  });
  beforeEach(async () => {
    await Enrollment.destroy({ where: {}, hooks: false });
    await Membership.destroy({ where: {}, hooks: false });
    await Clubs.destroy({ where: {}, hooks: false });
    await Students.destroy({ where: {}, hooks: false });
    await Courses.destroy({ where: {}, hooks: false });
    student = (await Students.create({ name: 'ada' })) as Student;
    courses = await Courses.bulkCreate([{ title: 'c0' }, { title: 'c1' }, { title: 'c2' }]);
    await markLog(outbox);
  });
  afterAll(async () => {
    await outbox.close();
    await db.cleanup();
  });

  it('addX writes an inserted event per link, keyed by the pair; adding one with other attributes an updated one', async () => {
    const sid = student.get('id');
    await student.addCourse(courses[0]);
    await student.addCourses([courses[1], courses[2]], { through: { grade: 'B' } });
    await student.addCourse(courses[1], { through: { grade: 'A' } });
    const log = await logOf(outbox);
    expect(log.map((e) => [e.topic, (e.payload.pk as { courseId: number }).courseId])).toEqual([
      ['school.enrollment.inserted', cid(0)],
      ['school.enrollment.inserted', cid(1)],
      ['school.enrollment.inserted', cid(2)],
      ['school.enrollment.updated', cid(1)],
    ]);
    expect(log[0]!.key).toBe(`school.Enrollment:${sid}:${cid(0)}`);
    expect(log[3]!.payload).toEqual({
      model: 'school.Enrollment',
      operation: 'updated',
      pk: { studentId: sid, courseId: cid(1) },
      changed: ['grade'],
      before: { grade: 'B', studentId: sid, courseId: cid(1) },
      after: { grade: 'A', studentId: sid, courseId: cid(1) },
      occurred_at: T0.toISOString(),
    });
  });

  it('removeX writes a deleted event with the link as it was', async () => {
    await student.addCourses([courses[0], courses[1]], { through: { grade: 'C' } });
    await markLog(outbox);
    await student.removeCourse(courses[0]);
    const log = await logOf(outbox);
    expect(brief(log)).toEqual([['school.enrollment.deleted', cid(0)]]);
    expect(log[0]!.payload.before).toEqual({
      grade: 'C',
      studentId: student.get('id'),
      courseId: cid(0),
    });
    expect(await Enrollment.count()).toBe(1);
  });

  for (const inTransaction of [false, true]) {
    it(`setXs inserts, updates and deletes the links it changes, in one go (${inTransaction ? 'in a transaction' : 'no transaction'})`, async () => {
      await student.addCourses([courses[0], courses[1]]);
      await markLog(outbox);
      const set = (o: object) =>
        student.setCourses([courses[1], courses[2]], { through: { grade: 'D' }, ...o });
      if (inTransaction) await db.sequelize.transaction((transaction) => set({ transaction }));
      else await set({});
      expect(brief(await logOf(outbox))).toEqual([
        ['school.enrollment.deleted', cid(0)],
        ['school.enrollment.inserted', cid(2)],
        ['school.enrollment.updated', cid(1)],
      ]);
      const links = await Enrollment.findAll({ order: [['courseId', 'ASC']] });
      expect(links.map((l) => [l.get('courseId'), l.get('grade')])).toEqual([
        [cid(1), 'D'],
        [cid(2), 'D'],
      ]);
    });
  }

  it('a link written through the through model itself is captured like any row', async () => {
    const link = await Enrollment.create({
      studentId: student.get('id'),
      courseId: cid(2),
      grade: 'E',
    });
    await link.update({ grade: 'F' });
    await link.destroy();
    expect((await logOf(outbox)).map((e) => e.topic)).toEqual([
      'school.enrollment.inserted',
      'school.enrollment.updated',
      'school.enrollment.deleted',
    ]);
  });

  it("the links the database's cascade deletes with a side are captured as deleted", async () => {
    await student.addCourses(courses);
    await markLog(outbox);
    await student.destroy();
    expect(brief(await logOf(outbox))).toEqual(
      [0, 1, 2].map((i) => ['school.enrollment.deleted', cid(i)]),
    );
    await markLog(outbox);
    const other = (await Students.create({ name: 'bob' })) as Student;
    await other.addCourses(courses);
    await markLog(outbox);
    await Courses.destroy({ where: { id: cid(1) } });
    expect(brief(await logOf(outbox))).toEqual([['school.enrollment.deleted', cid(1)]]);
    expect(await Enrollment.count()).toBe(2);
  });

  it('a rolled back setXs leaves the links as they were and no event', async () => {
    await student.addCourses([courses[0]]);
    await markLog(outbox);
    const t = await db.sequelize.transaction();
    await student.setCourses([courses[2]], { transaction: t });
    await t.rollback();
    expect(await logOf(outbox)).toEqual([]);
    expect((await Enrollment.findAll()).map((l) => l.get('courseId'))).toEqual([cid(0)]);
  });

  it('the links of a through table named by a string are captured through the model Sequelize made for it', async () => {
    const [chess, go] = await Clubs.bulkCreate([{ name: 'chess' }, { name: 'go' }]);
    const joining = student as unknown as {
      addClubs(c: unknown[]): Promise<unknown>;
      removeClub(c: unknown): Promise<unknown>;
    };
    await joining.addClubs([chess, go]);
    await joining.removeClub(chess);
    const log = await logOf(outbox);
    expect(log.map((e) => [e.topic, e.payload.pk])).toEqual([
      ['school.memberships.inserted', { studentId: student.get('id'), ClubId: chess!.get('id') }],
      ['school.memberships.inserted', { studentId: student.get('id'), ClubId: go!.get('id') }],
      ['school.memberships.deleted', { studentId: student.get('id'), ClubId: chess!.get('id') }],
    ]);
  });
});
