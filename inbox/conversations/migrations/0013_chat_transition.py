"""`OwnershipTransition` becomes `ChatTransition`: it has recorded status changes too since 0008.

State only: the table keeps its name (`inbox_ownershiptransition`, pinned by `db_table` first,
so the rename moves no table), and `cause` gains its choices (`OwnershipCause`, `StatusCause`),
which the database does not see. No row is rewritten."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('inbox', '0012_reports_speed'),
    ]

    operations = [
        migrations.AlterModelTable(
            name='ownershiptransition',
            table='inbox_ownershiptransition',
        ),
        migrations.RenameModel(
            old_name='OwnershipTransition',
            new_name='ChatTransition',
        ),
        migrations.AlterField(
            model_name='chattransition',
            name='cause',
            field=models.CharField(choices=[('Owner', [('request_human', 'Assistant handed over'), ('take_over', 'Manager took over'), ('manager_replied', 'Manager replied'), ('release', 'Released to the bot'), ('idle_release', 'Released: no manager message')]), ('Status', [('resolve', 'Resolved'), ('snooze', 'Snoozed'), ('reopen', 'Reopened'), ('snooze_ended', 'Snooze ended'), ('customer_wrote', 'Customer wrote')])], max_length=32),
        ),
    ]
