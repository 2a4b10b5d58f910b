"""The refusal of a channel number another channel has says the same whoever has it.

State only: a constraint's violation message is Django's, the database does not see it."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('inbox', '0013_chat_transition'),
    ]

    operations = [
        migrations.AlterConstraint(
            model_name='channel',
            name='channel_unique_phone_number_id',
            constraint=models.UniqueConstraint(condition=models.Q(('phone_number_id', ''), _negated=True), fields=('phone_number_id',), name='channel_unique_phone_number_id', violation_error_message="This number can't be added. Contact support if it is yours."),
        ),
    ]
