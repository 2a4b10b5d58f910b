"""Choices for the CRM entity types and the pull sources (`CrmEntity`, `PendingPull.Source`).

State only: choices are not in the database, so no table or row changes."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('bitrix24', '0001_initial'),
    ]

    operations = [
        migrations.AlterField(
            model_name='crmlink',
            name='entity_type',
            field=models.CharField(blank=True, choices=[('deal', 'Deal'), ('lead', 'Lead')], help_text='deal or lead', max_length=8),
        ),
        migrations.AlterField(
            model_name='pendingpull',
            name='entity_type',
            field=models.CharField(choices=[('lead', 'Lead'), ('deal', 'Deal'), ('contact', 'Contact')], max_length=8),
        ),
        migrations.AlterField(
            model_name='pendingpull',
            name='source',
            field=models.CharField(blank=True, choices=[('event', 'Outbound event'), ('offline', 'Offline event queue')], max_length=16),
        ),
    ]
